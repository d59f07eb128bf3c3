package httpapi

import (
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"path/filepath"
	"strconv"
	"unicode/utf8"

	"github.com/brain-in-go/brain/brain/api"
	"github.com/brain-in-go/brain/brain/internal/idem"
	"github.com/brain-in-go/brain/brain/internal/journal"
	"github.com/brain-in-go/brain/brain/internal/loophost"
	"github.com/brain-in-go/brain/brain/internal/session"
)

// maxMessageBytes bounds an ApiError message.
const maxMessageBytes = 4096

// StatusOf maps an API error code to its HTTP status.
func StatusOf(code string) int {
	switch code {
	case api.CodeInvalidRequest:
		return http.StatusBadRequest
	case api.CodeUnauthorized:
		return http.StatusUnauthorized
	case api.CodeNotGranted:
		return http.StatusForbidden
	case api.CodeNotFound:
		return http.StatusNotFound
	case api.CodeConflict, api.CodeEmitLimit:
		return http.StatusConflict
	case api.CodeReservedName:
		return http.StatusUnprocessableEntity
	case api.CodeOverloaded:
		return http.StatusServiceUnavailable
	}
	return http.StatusInternalServerError
}

// Error is an ApiError with the status it is answered with.
type Error struct {
	Status int
	Body   api.ApiError
}

func (e *Error) Error() string { return e.Body.Error() }

// newError builds an Error with the code's default retryable flag.
func newError(status int, code, message string) *Error {
	return &Error{Status: status, Body: api.ApiError{Code: code, Message: message, Retryable: api.DefaultRetryable(code)}}
}

func badRequest(message string) *Error {
	return newError(http.StatusBadRequest, api.CodeInvalidRequest, message)
}

func invalidField(message string) *Error {
	return newError(http.StatusUnprocessableEntity, api.CodeInvalidRequest, message)
}

var (
	errUnauthorized = newError(http.StatusUnauthorized, api.CodeUnauthorized, "a valid bearer token is required")
	errForeignHost  = newError(http.StatusUnauthorized, api.CodeUnauthorized, "without a token the server answers only requests naming a loopback host (localhost, 127.0.0.1, [::1])")
	errDraining     = newError(http.StatusServiceUnavailable, api.CodeOverloaded, "the server is shutting down and admits no new work")
	errKey          = badRequest("idempotency-key must be between 1 and 256 bytes")
	errKeyTwice     = badRequest("idempotency-key must be given once")
	errStorage      = newError(http.StatusServiceUnavailable, api.CodeOverloaded,
		"durable storage is failing (the disk may be full); the request was not carried out; retry later")
)

// ErrorOf converts any error to the Error answered for it.
func ErrorOf(err error) *Error {
	var he *Error
	if errors.As(err, &he) {
		return he
	}
	if session.TurnFailed(err) {
		// A turn that ran is answered by its failure's code, whatever
		// its cause wraps.
		return turnError(err)
	}
	switch {
	case errors.Is(err, idem.ErrConflict):
		return newError(http.StatusConflict, api.CodeConflict, "idempotency-key was already used with a different request")
	case errors.Is(err, idem.ErrAmbiguous):
		return newError(http.StatusInternalServerError, api.CodeAmbiguous,
			"a request with this idempotency-key was accepted but its outcome was never recorded; inspect the session before choosing a new key")
	case errors.Is(err, idem.ErrInvalidKey):
		return errKey
	case errors.Is(err, session.ErrUnavailable), errors.Is(err, idem.ErrWrite), errors.Is(err, journal.ErrWrite):
		return errStorage
	case errors.Is(err, journal.ErrOverloaded), errors.Is(err, idem.ErrClosed), errors.Is(err, session.ErrClosed), errors.Is(err, session.ErrOwnedElsewhere):
		return newError(http.StatusServiceUnavailable, api.CodeOverloaded, "the server is overloaded or shutting down; retry later")
	case errors.Is(err, loophost.ErrClosed):
		return errDraining
	case errors.Is(err, journal.ErrDamaged):
		var de *journal.DamagedError
		if errors.As(err, &de) {
			// The file's name, not its path: the log has the full path.
			return newError(http.StatusInternalServerError, api.CodeInternal, fmt.Sprintf(
				"the session's journal is damaged (%s, offset %d: %s); the session is refused until it is repaired",
				filepath.Base(de.File), de.Offset, de.Reason))
		}
		return newError(http.StatusInternalServerError, api.CodeInternal, "the session's journal is damaged")
	}
	e := turnError(err)
	if errors.Is(err, session.ErrInvalid) {
		// Paths and queries are checked before the engine runs, so what the
		// engine refuses as invalid is a field of the body.
		e.Status = http.StatusUnprocessableEntity
	}
	return e
}

// turnError answers the engine's error err with the status of its code.
// A message built from err's text (neither a turn's failure nor an
// environment's error, whose messages are recorded as they are) loses the
// prefixes of the code that wrapped it.
func turnError(err error) *Error {
	body := session.APIError(err)
	var te *session.TurnError
	var ee *session.EnvironmentError
	if !errors.As(err, &te) && !errors.As(err, &ee) {
		body.Message = cleanMessage(body.Message)
	}
	if len(body.Message) > maxMessageBytes {
		// Cut between characters: half of one would reach the client
		// as U+FFFD.
		cut := maxMessageBytes
		for cut > 0 && !utf8.RuneStart(body.Message[cut]) {
			cut--
		}
		body.Message = body.Message[:cut]
	}
	if body.Message == "" {
		body.Message = body.Code
	}
	return &Error{Status: StatusOf(body.Code), Body: *body}
}

// WriteError answers err as an ApiError.
func WriteError(w http.ResponseWriter, err error) {
	e := ErrorOf(err)
	if sw, ok := w.(*statusWriter); ok && errors.Is(err, journal.ErrDamaged) {
		sw.err = err // logged with the request: it names the file and offset
	}
	b, _ := json.Marshal(e.Body)
	writeRaw(w, e.Status, b)
}

// WriteJSON answers v as JSON with status.
func WriteJSON(w http.ResponseWriter, status int, v any) {
	b, err := json.Marshal(v)
	if err != nil {
		WriteError(w, err)
		return
	}
	writeRaw(w, status, b)
}

func writeRaw(w http.ResponseWriter, status int, body []byte) {
	if len(body) > 0 {
		w.Header().Set("Content-Type", "application/json")
		w.Header().Set("Content-Length", strconv.Itoa(len(body)))
	}
	w.WriteHeader(status)
	if len(body) > 0 && status != http.StatusNoContent {
		_, _ = w.Write(body)
	}
}
