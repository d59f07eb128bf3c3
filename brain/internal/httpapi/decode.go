package httpapi

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"mime"
	"net/http"
	"net/url"
	"reflect"
	"strconv"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/brain-in-go/brain/brain/internal/session"
	"github.com/brain-in-go/brain/envsdk/envapi"
)

// readBody reads the request body within the size limit. It answers 413
// for a larger body.
func (s *Server) readBody(w http.ResponseWriter, r *http.Request) ([]byte, error) {
	return s.readBodyWithin(w, r, s.opts.MaxRequestBytes, "request body")
}

// readBodyWithin reads the request body, named what in the 413 it answers
// for one larger than limit bytes, within Options.BodyReadTimeout. After a
// 413 the connection is closed once what the client is still sending
// was drained (drainAndClose); after a failed read, at once.
func (s *Server) readBodyWithin(w http.ResponseWriter, r *http.Request, limit int64, what string) ([]byte, error) {
	rc := http.NewResponseController(w)
	timeout := s.opts.BodyReadTimeout
	if timeout <= 0 {
		timeout = DefaultBodyTimeout
	}
	_ = rc.SetReadDeadline(time.Now().Add(timeout))
	if r.ContentLength > limit {
		drainAndClose(w, r)
		return nil, tooLarge(what, limit)
	}
	b, err := readAll(http.MaxBytesReader(w, r.Body, limit), r.ContentLength)
	if err != nil {
		var mbe *http.MaxBytesError
		if errors.As(err, &mbe) {
			drainAndClose(w, r)
			return nil, tooLarge(what, limit)
		}
		// The rest of the body is not waited for: the answer goes out
		// now and the connection is closed after it.
		closeUnread(w, r)
		return nil, badRequest("reading the " + what + " failed")
	}
	_ = rc.SetReadDeadline(time.Time{})
	return b, nil
}

func tooLarge(what string, limit int64) error {
	return newError(http.StatusRequestEntityTooLarge, "invalid_request", fmt.Sprintf("%s is larger than %d bytes", what, limit))
}

// readAll reads r to its end into one buffer sized by the declared
// length (when known, within the limit r enforces), instead of growing
// one from 512 bytes.
func readAll(r io.Reader, declared int64) ([]byte, error) {
	if declared <= 0 || declared > 64<<10 { // a larger buffer waits for the bytes to arrive
		return io.ReadAll(r)
	}
	b := make([]byte, 0, declared+1) // +1: the read that sees the end
	for {
		n, err := r.Read(b[len(b):cap(b)])
		b = b[:len(b)+n]
		if err == io.EOF {
			return b, nil
		}
		if err != nil {
			return b, err
		}
		if len(b) == cap(b) {
			b = append(b, 0)[:len(b)]
		}
	}
}

// readJSON checks the Content-Type, reads the body and decodes it strictly
// into v: malformed JSON answers 400, unknown fields and wrong types 422.
func (s *Server) readJSON(w http.ResponseWriter, r *http.Request, v any) ([]byte, error) {
	if ct := r.Header.Get("Content-Type"); ct != "application/json" { // the common case needs no parsing
		mt, _, err := mime.ParseMediaType(ct)
		if err != nil || mt != "application/json" {
			return nil, newError(http.StatusUnsupportedMediaType, "invalid_request", "Content-Type must be application/json")
		}
	}
	b, err := s.readBody(w, r)
	if err != nil {
		return nil, err
	}
	if err := decodeStrict(b, v); err != nil {
		return nil, err
	}
	return b, nil
}

// errNotUTF8 refuses a JSON body that is not UTF-8 (RFC 8259):
// encoding/json would keep its bytes in raw values, to be journalled as
// JSON no client can read, and replace them in strings.
var errNotUTF8 = badRequest("request body is not valid JSON: it is not UTF-8")

// decodeStrict decodes exactly one JSON value into v, refusing unknown
// fields and a body that is not UTF-8.
func decodeStrict(b []byte, v any) error {
	if !utf8.Valid(b) {
		return errNotUTF8
	}
	// One pass: the decoder scans the whole value before it decodes any of
	// it, so malformed JSON is reported first, as is anything but
	// whitespace after the value.
	d := json.NewDecoder(bytes.NewReader(b))
	d.DisallowUnknownFields()
	err := d.Decode(v)
	var se *json.SyntaxError
	if errors.As(err, &se) || errors.Is(err, io.EOF) || errors.Is(err, io.ErrUnexpectedEOF) ||
		len(bytes.TrimLeft(b[min(int(d.InputOffset()), len(b)):], " \t\r\n")) > 0 {
		return badRequest("request body is not valid JSON")
	}
	if err != nil {
		var te *json.UnmarshalTypeError
		if errors.As(err, &te) {
			if te.Field == "" {
				return invalidField("the request body must be " + jsonKind(te.Type))
			}
			return invalidField(fmt.Sprintf("field %q must be %s", te.Field, jsonKind(te.Type)))
		}
		return invalidField(cleanMessage(err.Error()))
	}
	return exactMembers(b, v)
}

// jsonKind names the JSON type a value decoded into t must have, as the
// API's documents name it (not the server's Go type), with its article.
func jsonKind(t reflect.Type) string {
	switch k := envapi.JSONKind(t); {
	case t == nil:
		return "another JSON type"
	case k == "boolean":
		return "true or false"
	case strings.IndexByte("aeiou", k[0]) >= 0:
		return "an " + k
	default:
		return "a " + k
	}
}

// exactMembers refuses a body decoded into v whose objects repeat a member
// or name one with other case than its field's: encoding/json keeps the
// last of duplicate members silently, and matches names without regard
// to case; the API's objects are closed and their names exact.
func exactMembers(b []byte, v any) error {
	at, key, dup, misnamed := envapi.StrictMembers(b, v)
	switch {
	case dup:
		return duplicateKey(at, key)
	case misnamed:
		return invalidField(fmt.Sprintf("unknown field %q (field names are case-sensitive)", joinPath(at, key)))
	}
	return nil
}

// duplicateKey is the 400 for a body whose object at the dotted path at
// ("" for the top level) has the member key twice: encoding/json would
// keep one of them silently, so the body is malformed.
func duplicateKey(at, key string) error {
	return badRequest(fmt.Sprintf("request body has the key %q twice", joinPath(at, key)))
}

func joinPath(at, key string) string {
	if at == "" {
		return key
	}
	return at + "." + key
}

// sessionID answers the {id} path value, or 400 when it is malformed.
func sessionID(r *http.Request) (string, error) {
	id := r.PathValue("id")
	if !session.ValidSessionID(id) {
		return "", badRequest("session id must match ^ses_[A-Za-z0-9]{20,32}$")
	}
	return id, nil
}

// query answers r's query values, or the 400 for a malformed query:
// URL.Query drops what it cannot decode ("after=%zz" would read as no
// cursor, "provider=%zz" as no filter), so a value the client sent would
// be ignored.
func query(r *http.Request) (url.Values, error) {
	q, err := url.ParseQuery(r.URL.RawQuery)
	if err != nil {
		return nil, badRequest("the query string is malformed")
	}
	return q, nil
}

// cursor answers the events cursor: the after query value, else
// Last-Event-ID, else 0.
func cursor(r *http.Request) (uint64, error) {
	q, err := query(r)
	if err != nil {
		return 0, err
	}
	if q.Has("after") {
		n, err := strconv.ParseUint(q.Get("after"), 10, 64)
		if err != nil || len(q["after"]) != 1 {
			return 0, badRequest("after must be one non-negative integer")
		}
		return n, nil
	}
	ids := r.Header.Values("Last-Event-ID")
	if len(ids) > 1 {
		// Of two cursors, neither may be chosen silently.
		return 0, badRequest("Last-Event-ID must be given once")
	}
	if len(ids) == 1 && ids[0] != "" {
		n, err := strconv.ParseUint(ids[0], 10, 64)
		if err != nil {
			return 0, badRequest("Last-Event-ID must be a non-negative integer")
		}
		return n, nil
	}
	return 0, nil
}
