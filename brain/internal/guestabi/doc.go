// Package guestabi is the guest side of the Wasm ABI shared by the
// agentloop and Tool SDKs, built for wasip1 only: the brain_alloc export
// through which the host hands the guest its input, the answer buffer
// the guest's export answers, and the calling convention of the host's
// service imports. MaxMessage and ClipMessage, the bound on the message
// of an export's error answer, are built everywhere: the host records
// that much of a message and the SDKs send no more. So is Ended: the SDKs
// refuse in the guest a service call whose context has ended.
//
// A service import takes its JSON input at (ptr, len) and answers
// status<<32 | answer length; the guest then copies the answer into a
// buffer of that length with the host's answer import. Status 0 is
// success; any other status means the answer is a host error document.
// The host keeps one pending answer, which the next service call
// replaces, so Call makes the two imports one step that no other
// goroutine's call enters.
//
// An export answers ptr<<32 | len of its answer, which stays valid until
// the next export call.
package guestabi
