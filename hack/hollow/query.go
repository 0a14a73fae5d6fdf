package hollow

import (
	"encoding/base64"
	"encoding/json"
	"fmt"
	"net/url"
	"sort"
	"strconv"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/apimachinery/pkg/labels"
)

// query is what a list or watch asks for.
type query struct {
	namespace string
	labels    labels.Selector
	fields    fields.Selector
	limit     int
	after     string // from continue: the last key of the page before
	listRV    uint64 // from continue: the first page's resourceVersion
	rv        uint64 // 0: unset or "0"
	watch     bool
	bookmarks bool
	// initialEvents: a streamed list (sendInitialEvents), as client-go's
	// informers ask: every object as added, then a bookmark that says so.
	initialEvents bool
	timeout       time.Duration
}

// continueToken is what a page's continue says: where the next page
// starts and the resourceVersion of the first.
type continueToken struct {
	RV    uint64 `json:"rv"`
	Start string `json:"start"`
}

func parseQuery(namespace string, v url.Values) (*query, error) {
	q := &query{namespace: namespace}
	var err error
	if q.labels, err = labels.Parse(v.Get("labelSelector")); err != nil {
		return nil, apierrors.NewBadRequest(fmt.Sprintf("unable to parse requirement: %v", err))
	}
	if q.fields, err = fields.ParseSelector(v.Get("fieldSelector")); err != nil {
		return nil, apierrors.NewBadRequest(err.Error())
	}
	for _, r := range q.fields.Requirements() {
		if r.Field != "metadata.name" && r.Field != "metadata.namespace" {
			return nil, apierrors.NewBadRequest(fmt.Sprintf("field label not supported: %s", r.Field))
		}
	}
	if s := v.Get("limit"); s != "" {
		if q.limit, err = strconv.Atoi(s); err != nil || q.limit < 0 {
			return nil, apierrors.NewBadRequest("limit must be a non-negative integer")
		}
	}
	if s := v.Get("continue"); s != "" {
		var t continueToken
		b, err := base64.RawURLEncoding.DecodeString(s)
		if err == nil {
			err = json.Unmarshal(b, &t)
		}
		if err != nil {
			return nil, apierrors.NewBadRequest("continue key is not valid: " + err.Error())
		}
		q.after, q.listRV = t.Start, t.RV
	}
	if s := v.Get("resourceVersion"); s != "" && s != "0" {
		if q.rv, err = strconv.ParseUint(s, 10, 64); err != nil {
			return nil, apierrors.NewBadRequest(fmt.Sprintf("invalid resource version %q", s))
		}
	}
	q.watch = v.Get("watch") == "true" || v.Get("watch") == "1"
	q.bookmarks = v.Get("allowWatchBookmarks") == "true"
	q.initialEvents = v.Get("sendInitialEvents") == "true"
	if s := v.Get("timeoutSeconds"); s != "" {
		n, err := strconv.Atoi(s)
		if err != nil {
			return nil, apierrors.NewBadRequest("timeoutSeconds must be an integer")
		}
		q.timeout = time.Duration(n) * time.Second
	}
	return q, nil
}

// match reports whether an object is in the query's namespace and matches
// its selectors.
func (q *query) match(o *stored) bool {
	m := o.meta()
	if q.namespace != "" && m.GetNamespace() != q.namespace {
		return false
	}
	if !q.labels.Empty() && !q.labels.Matches(labels.Set(m.GetLabels())) {
		return false
	}
	if !q.fields.Empty() && !q.fields.Matches(fields.Set{"metadata.name": m.GetName(), "metadata.namespace": m.GetNamespace()}) {
		return false
	}
	return true
}

func (t continueToken) encode() string {
	b, _ := json.Marshal(t)
	return base64.RawURLEncoding.EncodeToString(b)
}

// sortedObjects returns a resource's objects by key.
func sortedObjects(objs map[string]*stored) []*stored {
	keys := make([]string, 0, len(objs))
	for k := range objs {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	out := make([]*stored, len(keys))
	for i, k := range keys {
		out[i] = objs[k]
	}
	return out
}
