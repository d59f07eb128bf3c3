package api

import (
	"errors"
	"fmt"
	"testing"
)

// An answer's error matches the sentinel of its code through any
// wrapping, whatever its message, details and retryable flag; it matches
// no other code's sentinel, and errors.As still finds it.
func TestApiErrorIsItsCode(t *testing.T) {
	answer := &ApiError{Code: CodeNotFound, Message: "session ses_x not found", Details: []byte(`{"id":"ses_x"}`)}
	err := fmt.Errorf("client: GET /v1/sessions/ses_x: %w", answer)
	if !errors.Is(err, ErrNotFound) {
		t.Errorf("errors.Is(%v, ErrNotFound) = false", err)
	}
	for _, other := range []error{ErrConflict, ErrOverloaded, ErrInternal, &ApiError{Code: "not_found_either"}} {
		if errors.Is(err, other) {
			t.Errorf("errors.Is(%v, %v) = true", err, other)
		}
	}
	if errors.Is(errors.New("not_found: session ses_x not found"), ErrNotFound) {
		t.Error("an error that is no ApiError matches ErrNotFound")
	}
	var ae *ApiError
	if !errors.As(err, &ae) || ae != answer {
		t.Errorf("errors.As(%v) = %v, want the answer itself", err, ae)
	}
	busy := fmt.Errorf("submit: %w", &ApiError{Code: CodeOverloaded, Message: "draining", Retryable: true})
	if !errors.Is(busy, ErrOverloaded) || errors.Is(busy, ErrNotFound) {
		t.Errorf("%v: Is(ErrOverloaded) = %v, Is(ErrNotFound) = %v", busy, errors.Is(busy, ErrOverloaded), errors.Is(busy, ErrNotFound))
	}
}

// Every code of the closed set has its error, matched by an answer of
// that code alone.
func TestEveryCodeHasItsError(t *testing.T) {
	errs := []*ApiError{ErrInvalidRequest, ErrUnauthorized, ErrNotFound, ErrConflict, ErrOverloaded,
		ErrAmbiguous, ErrExecutorFailed, ErrModelProviderFailed, ErrModelOutputInvalid,
		ErrModelOutputIncomplete, ErrInternal, ErrNotGranted, ErrReservedName, ErrEmitLimit,
		ErrAgentloopFailed, ErrCancelled, ErrModelCallLimit, ErrTimeout, ErrInterrupted}
	if len(errs) != len(ErrorCodes) {
		t.Fatalf("%d errors for %d codes", len(errs), len(ErrorCodes))
	}
	for i, code := range ErrorCodes {
		if errs[i].Code != code || errs[i].Retryable != DefaultRetryable(code) {
			t.Errorf("error of %s = %+v", code, errs[i])
		}
		for j, other := range ErrorCodes {
			if got := errors.Is(&ApiError{Code: other, Message: "m"}, errs[i]); got != (i == j) {
				t.Errorf("errors.Is(%s answer, Err of %s) = %v", other, code, got)
			}
		}
	}
}
