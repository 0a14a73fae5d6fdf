package framework

import (
	"bytes"
	"context"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
)

// EtcdPut writes value under key in the environment's etcd, bypassing
// every API server: how a test stands for data an older server stored.
// It uses etcd's JSON gateway, so the framework needs no etcd client.
func (e *Env) EtcdPut(ctx context.Context, key string, value []byte) error {
	_, err := e.etcdKV(ctx, "put", map[string]string{
		"key":   base64.StdEncoding.EncodeToString([]byte(key)),
		"value": base64.StdEncoding.EncodeToString(value),
	})
	return err
}

// EtcdDelete deletes key from the environment's etcd, bypassing every API
// server: how a test deletes what a stopped server stores.
func (e *Env) EtcdDelete(ctx context.Context, key string) error {
	body, err := e.etcdKV(ctx, "deleterange", map[string]string{"key": base64.StdEncoding.EncodeToString([]byte(key))})
	if err != nil {
		return err
	}
	var out struct {
		Deleted string `json:"deleted"`
	}
	if err := json.Unmarshal(body, &out); err != nil {
		return fmt.Errorf("decoding etcd deleterange: %w", err)
	}
	if out.Deleted != "1" {
		return fmt.Errorf("etcd has no key %s", key)
	}
	return nil
}

// EtcdKeys lists the keys under prefix in the environment's etcd.
func (e *Env) EtcdKeys(ctx context.Context, prefix string) ([]string, error) {
	end := []byte(prefix)
	end[len(end)-1]++
	body, err := e.etcdKV(ctx, "range", map[string]any{
		"key":       base64.StdEncoding.EncodeToString([]byte(prefix)),
		"range_end": base64.StdEncoding.EncodeToString(end),
		"keys_only": true,
	})
	if err != nil {
		return nil, err
	}
	var out struct {
		KVs []struct {
			Key []byte `json:"key"`
		} `json:"kvs"`
	}
	if err := json.Unmarshal(body, &out); err != nil {
		return nil, fmt.Errorf("decoding etcd range: %w", err)
	}
	keys := make([]string, 0, len(out.KVs))
	for _, kv := range out.KVs {
		keys = append(keys, string(kv.Key))
	}
	return keys, nil
}

func (e *Env) etcdKV(ctx context.Context, op string, req any) ([]byte, error) {
	b, err := json.Marshal(req)
	if err != nil {
		return nil, err
	}
	r, err := http.NewRequestWithContext(ctx, http.MethodPost, e.EtcdURL+"/v3/kv/"+op, bytes.NewReader(b))
	if err != nil {
		return nil, err
	}
	r.Header.Set("Content-Type", "application/json")
	resp, err := http.DefaultClient.Do(r)
	if err != nil {
		return nil, fmt.Errorf("etcd %s: %w", op, err)
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(resp.Body)
	if err != nil {
		return nil, err
	}
	if resp.StatusCode != http.StatusOK {
		return nil, fmt.Errorf("etcd %s: %d %s", op, resp.StatusCode, body)
	}
	return body, nil
}
