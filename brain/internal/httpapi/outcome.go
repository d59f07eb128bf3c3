package httpapi

import (
	"fmt"
	"net/http"

	"github.com/brain-in-go/brain/brain/api"
	"github.com/brain-in-go/brain/brain/internal/envbind"
	"github.com/brain-in-go/brain/envsdk/envapi"
)

// carriesOutcome reports whether a Tool's call of method, or a host's
// update of that type, posts its outcome: result, returned and finish.
func carriesOutcome(method string) bool {
	return method == envapi.MethodResult || method == envapi.MethodReturned || method == envapi.MethodFinish
}

// outcomeBound answers the largest request that may carry a Tool's
// outcome: the bound on an environment's answer (the Binder's
// MaxResponseBytes, BRAIN_MAX_ENVIRONMENT_RESPONSE_BYTES), its default
// without a Binder.
func (s *Server) outcomeBound() int64 {
	if s.opts.Bindings != nil {
		if n := s.opts.Bindings.MaxResponseBytes(); n > 0 {
			return n
		}
	}
	return envbind.DefaultMaxResponseBytes
}

// checkOutcomeSize refuses, with a 413, a request of n bytes carrying a
// Tool's outcome (what names it: "finish call", "result update") that is
// larger than outcomeBound. A Tool's outcome takes the bound of the
// execute's own answer, whichever way it comes: an environment's
// callback or a host's update or service call. Refused as a body past the
// request bound is, it records nothing, so the Tool may still finish with
// a smaller outcome.
func (s *Server) checkOutcomeSize(what string, n int64) error {
	limit := s.outcomeBound()
	if n <= limit {
		return nil
	}
	return newError(http.StatusRequestEntityTooLarge, api.CodeInvalidRequest, fmt.Sprintf(
		"a %s is larger than %d bytes, the largest environment answer Brain takes (BRAIN_MAX_ENVIRONMENT_RESPONSE_BYTES); nothing was recorded",
		what, limit))
}
