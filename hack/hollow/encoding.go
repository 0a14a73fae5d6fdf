package hollow

import (
	"bytes"
	"mime"
	"net/http"
	"strings"

	"k8s.io/apimachinery/pkg/runtime"
)

// media is an encoding a hollow member answers in: JSON, or protobuf for
// built-in types when the client asks for it (client-go takes the answer's
// Content-Type, as with a kube-apiserver that serves a CRD in JSON only).
type media struct {
	info runtime.SerializerInfo
}

var (
	jsonMedia     = mustMedia(runtime.ContentTypeJSON)
	protobufMedia = mustMedia(runtime.ContentTypeProtobuf)
)

func mustMedia(mediaType string) *media {
	info, ok := runtime.SerializerInfoForMediaType(codecs.SupportedMediaTypes(), mediaType)
	if !ok {
		panic("no serializer for " + mediaType)
	}
	return &media{info: info}
}

func (m *media) protobuf() bool { return m == protobufMedia }

// negotiate picks the first encoding of the Accept header that the
// resource is served in; JSON when none is.
func negotiate(r *http.Request, res *resource) *media {
	for _, part := range strings.Split(r.Header.Get("Accept"), ",") {
		mt, _, err := mime.ParseMediaType(strings.TrimSpace(part))
		if err != nil {
			continue
		}
		switch mt {
		case runtime.ContentTypeProtobuf:
			if res != nil && res.builtin {
				return protobufMedia
			}
		case runtime.ContentTypeJSON, "application/*", "*/*":
			return jsonMedia
		}
	}
	return jsonMedia
}

// encode encodes obj, whose apiVersion and kind are set.
func (m *media) encode(obj runtime.Object) ([]byte, error) {
	var buf bytes.Buffer
	if err := m.info.Serializer.Encode(obj, &buf); err != nil {
		return nil, err
	}
	return buf.Bytes(), nil
}

// encoded is the object's encoding, made once per object version and
// encoding and shared by every answer and watch.
func (s *stored) encoded(m *media) ([]byte, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	cached := &s.json
	if m.protobuf() {
		cached = &s.proto
	}
	if *cached != nil {
		return *cached, nil
	}
	b, err := m.encode(s.obj)
	if err != nil {
		return nil, err
	}
	*cached = b
	return b, nil
}

// contentType is the Content-Type of an answer in m; watch streams in
// protobuf say so, as a kube-apiserver's do.
func (m *media) contentType(stream bool) string {
	if m.protobuf() && stream {
		return m.info.MediaType + ";stream=watch"
	}
	return m.info.MediaType
}
