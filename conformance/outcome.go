package conformance

import (
	"fmt"
	"time"

	"github.com/brain-in-go/brain/envsdk/envapi"
)

// finishHold is how long the fake Brain holds its acknowledgement of a
// Tool's finish in toolCmd. A provider that waits for finish before
// answering answers at least this long after finish arrived; one that
// answered first had its answer arriving about when finish did.
const finishHold = 100 * time.Millisecond

// toolOutcome is the outcome Brain records for execution seq of session,
// whose execute was answered in ex. Brain takes the execution's accepted
// service calls and the answer in the order they arrive:
//
//   - a result call, and a returned call with an outcome, give the Tool's
//     last result;
//   - the answer is read by envapi.ToolOutcome: a result receipt (or a
//     failure or unknown one) closes the Tool with its outcome, and a
//     returned receipt's output, when it has one and the returned service
//     was not called first, gives the last result;
//   - finish closes the Tool with its outcome, or, without one, with the
//     last result given before it, else ok with a null value.
//
// A provider that waits for finish before answering has closed the Tool
// before its receipt was read; one that answers first has its receipt
// read first. toolCmd acknowledges finish finishHold late, so a finish
// whose call arrived at least that long before the answer's first byte
// was waited for; any later one counts as sent after the answer.
func (p *probe) toolOutcome(session string, seq uint64, ex *exchange) (envapi.Outcome, error) {
	answered := ex.FirstByte
	if answered.IsZero() {
		answered = ex.Answered
	}
	answered = answered.Add(-finishHold)
	var last *envapi.Outcome
	returned, read := false, false
	// receipt reads the answer; closed when it closes the Tool.
	receipt := func() (envapi.Outcome, bool) {
		read = true
		o, closed := envapi.ToolOutcome(ex.receipt())
		if !closed && !returned && o.Status != "" {
			last = &o
		}
		return o, closed
	}
	for _, call := range p.brain.CallsFor(session, seq) {
		if !call.Accepted() {
			continue
		}
		if !read && !call.Time.Before(answered) {
			if o, closed := receipt(); closed {
				return o, nil
			}
		}
		switch call.Method {
		case envapi.MethodResult, envapi.MethodReturned:
			if call.Method == envapi.MethodReturned {
				returned = true
			}
			if isNull(call.Input) {
				continue
			}
			if o, err := envapi.DecodeOutcome(call.Input); err == nil {
				last = &o
			}
		case envapi.MethodFinish:
			if !isNull(call.Input) {
				o, err := envapi.DecodeOutcome(call.Input)
				if err != nil {
					return envapi.Outcome{}, fmt.Errorf("finish input is not an Outcome: %w", err)
				}
				return o, nil
			}
			if last != nil {
				return *last, nil
			}
			return envapi.OK(nil), nil
		}
	}
	if !read {
		if o, closed := receipt(); closed {
			return o, nil
		}
	}
	if last != nil {
		return *last, nil
	}
	return envapi.UnknownOutcome("the Tool has not finished"), nil
}
