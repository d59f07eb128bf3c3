package client

import "fmt"

// UncertainError reports a call that may have been carried out although
// no answer of the server's arrived: an attempt may have reached the
// server before its connection was lost, a proxy in front of the server
// answered in its stead (a 408 or any 5xx without an ApiError, a 2xx
// that is not Brain's answer of the call), a node
// of a cluster answered that the answer of the node it forwarded the
// call to was lost (ambiguous, retryable), or ctx ended or the client
// closed while the call was under way; the retries the client made with
// the same key did not get the answer either. Brain's own 503 overloaded
// answer is one too: Brain answers it to a call it refused, and also to
// one whose outcome it does not know (a node of a cluster that lost the
// session's lease while the call ran, a storage commit of unknown
// outcome); such a call is not sent again.
//
// Key is the call's Idempotency-Key, the one the client chose when the
// call set none. Sending the call again with IdempotencyKey(Key) (a
// message through the same kind of call: Submit, or Send with the same
// kind of ctx) is answered with the first call's outcome, or carries the
// call out if it never ran; the call sent without that key is another
// request and may be carried out a second time. A host tool call's Emit,
// Result and Returned are sent again the same way, with the same
// arguments, on the same ToolCall.
//
// Err is the last attempt's error: errors.As finds the *api.ApiError of a
// proxy's or the server's answer, errors.Is the ctx's error; when ctx
// ended while the call waited to be sent again, or while it was, Err
// carries both ctx's error and the answer of the attempt before.
type UncertainError struct {
	Key string
	Err error
}

func (e *UncertainError) Error() string {
	return fmt.Sprintf("client: outcome unknown, send the call again with the same idempotency key: %v", e.Err)
}

func (e *UncertainError) Unwrap() error { return e.Err }
