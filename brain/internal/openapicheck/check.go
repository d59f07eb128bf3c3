package openapicheck

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"mime"
	"net/http"
	"strings"
	"sync"

	"github.com/pb33f/libopenapi"
	validator "github.com/pb33f/libopenapi-validator"
	verrors "github.com/pb33f/libopenapi-validator/errors"
	"github.com/pb33f/libopenapi-validator/helpers"
)

// Checker validates responses against one document. It is safe for
// concurrent use.
type Checker struct {
	mu sync.Mutex
	v  validator.Validator

	// OnMismatch, when set, is told of each mismatch as it is found.
	OnMismatch func(*Mismatch)

	rmu        sync.Mutex
	checked    int
	mismatches []*Mismatch
}

// Mismatch is a response that disagrees with the document.
type Mismatch struct {
	Method, URL string
	Status      int
	ContentType string
	// Body is the start of the response body.
	Body string
	// Problems say what disagrees.
	Problems []string
}

func (m *Mismatch) Error() string {
	return fmt.Sprintf("%s %s -> %d %s %.300q: %s", m.Method, m.URL, m.Status, m.ContentType, m.Body, strings.Join(m.Problems, "; "))
}

// New parses doc and checks it against the OpenAPI schema.
func New(doc []byte) (*Checker, error) {
	d, err := libopenapi.NewDocument(doc)
	if err != nil {
		return nil, fmt.Errorf("openapicheck: %w", err)
	}
	v, errs := validator.NewValidator(d)
	if len(errs) > 0 {
		return nil, fmt.Errorf("openapicheck: %w", errors.Join(errs...))
	}
	if ok, verrs := v.ValidateDocument(); !ok {
		return nil, fmt.Errorf("openapicheck: the document is not valid OpenAPI: %s", describe(verrs))
	}
	return &Checker{v: v}, nil
}

func describe(errs []*verrors.ValidationError) string {
	parts := make([]string, 0, len(errs))
	for _, e := range errs {
		s := e.Message
		if e.Reason != "" {
			s += ": " + e.Reason
		}
		for _, se := range e.SchemaValidationErrors {
			s += fmt.Sprintf(" [%s: %s]", se.FieldPath, se.Reason)
		}
		parts = append(parts, s)
	}
	return strings.Join(parts, "; ")
}

// Check validates resp, the answer to req. It answers a *Mismatch when
// they disagree, and nil when they agree or the document does not
// describe req's path. A non-stream body is read and replaced with an
// unread copy, so the caller can still read it.
func (c *Checker) Check(req *http.Request, resp *http.Response) error {
	ct := resp.Header.Get("Content-Type")
	media, _, _ := mime.ParseMediaType(ct)
	vresp := *resp
	var body []byte
	if media == "text/event-stream" {
		vresp.Body = http.NoBody // a stream is checked by its content type only
	} else if resp.Body != nil && resp.Body != http.NoBody {
		var err error
		body, err = io.ReadAll(resp.Body)
		resp.Body.Close()
		resp.Body = io.NopCloser(bytes.NewReader(body))
		if err != nil {
			return nil // a broken connection is the test's concern, not the document's
		}
		vresp.Body = io.NopCloser(bytes.NewReader(body))
	}
	vreq := req.Clone(req.Context())
	vreq.Body = http.NoBody
	c.mu.Lock()
	ok, errs := c.v.ValidateHttpResponse(vreq, &vresp)
	c.mu.Unlock()
	if !ok && undocumented(errs) {
		return nil
	}
	c.rmu.Lock()
	c.checked++
	c.rmu.Unlock()
	if ok {
		return nil
	}
	m := &Mismatch{Method: req.Method, URL: req.URL.String(), Status: resp.StatusCode, ContentType: ct, Body: string(body)}
	for _, e := range errs {
		m.Problems = append(m.Problems, describe([]*verrors.ValidationError{e}))
	}
	c.rmu.Lock()
	c.mismatches = append(c.mismatches, m)
	c.rmu.Unlock()
	if c.OnMismatch != nil {
		c.OnMismatch(m)
	}
	return m
}

// undocumented reports errors that only say the document has no such
// path or operation.
func undocumented(errs []*verrors.ValidationError) bool {
	if len(errs) == 0 {
		return false
	}
	for _, e := range errs {
		if e.ValidationType != helpers.PathValidation && e.ValidationSubType != helpers.ValidationMissingOperation {
			return false
		}
	}
	return true
}

// Checked answers how many responses were validated (not counting those
// of undocumented paths).
func (c *Checker) Checked() int {
	c.rmu.Lock()
	defer c.rmu.Unlock()
	return c.checked
}

// Mismatches answers every mismatch found so far.
func (c *Checker) Mismatches() []*Mismatch {
	c.rmu.Lock()
	defer c.rmu.Unlock()
	return append([]*Mismatch(nil), c.mismatches...)
}

// Transport answers a RoundTripper that sends through base (nil:
// http.DefaultTransport) and checks every response. A mismatch does not
// change what the caller receives.
func (c *Checker) Transport(base http.RoundTripper) http.RoundTripper {
	if base == nil {
		base = http.DefaultTransport
	}
	return &transport{c: c, base: base}
}

type transport struct {
	c    *Checker
	base http.RoundTripper
}

func (t *transport) RoundTrip(req *http.Request) (*http.Response, error) {
	resp, err := t.base.RoundTrip(req)
	if err != nil {
		return resp, err
	}
	_ = t.c.Check(req, resp)
	return resp, nil
}
