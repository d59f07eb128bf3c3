package session

import (
	"strings"
	"unicode/utf8"

	"github.com/brain-in-go/brain/brain/api"
	"github.com/brain-in-go/brain/brain/internal/model"
	"github.com/brain-in-go/brain/envsdk/envapi"
)

// maxFailureMessage bounds the message of a failure the engine records
// or answers in another party's words (a model provider's error, an
// environment's failure or unknown outcome, a tool's error, a loop's
// failure): the bound of an ApiError's message and of a receipt's. It is
// the model clients' bound, which cut a provider's message as the
// engine does.
const maxFailureMessage = model.MaxMessageBytes

// boundMessage answers s when it holds at most maxFailureMessage bytes;
// otherwise its head, cut between characters, followed by a marker
// saying how long the whole message was, maxFailureMessage bytes at
// most in all (model.CutMessage). The answer is valid UTF-8 (see
// wholeCharacters), so that the message answered is the one a record
// holds.
func boundMessage(s string) string {
	s = wholeCharacters(s)
	return model.CutMessage(s, len(s))
}

// wholeCharacters answers s as valid UTF-8: a character s ends inside
// (another party's text read up to a bound in bytes) is left out, and any
// other byte that is not UTF-8 reads as U+FFFD, as it reads once
// encoded in a record.
func wholeCharacters(s string) string {
	if utf8.ValidString(s) {
		return s
	}
	for i := len(s) - 1; i >= 0 && i >= len(s)-utf8.UTFMax; i-- {
		if utf8.RuneStart(s[i]) {
			if !utf8.FullRuneInString(s[i:]) {
				s = s[:i]
			}
			break
		}
	}
	return strings.ToValidUTF8(s, string(utf8.RuneError))
}

// boundFailure answers f with its message bounded.
func boundFailure(f api.Failure) api.Failure {
	f.Message = boundMessage(f.Message)
	return f
}

// boundOutcome answers o with its messages bounded; o itself is left as
// it is.
func boundOutcome(o api.Outcome) api.Outcome {
	o.Message = boundMessage(o.Message)
	if o.Error != nil && (len(o.Error.Message) > maxFailureMessage || !utf8.ValidString(o.Error.Message)) {
		e := *o.Error
		e.Message = boundMessage(e.Message)
		o.Error = &e
	}
	return o
}

// boundEnvOutcome answers o with its messages bounded; o itself is left
// as it is.
func boundEnvOutcome(o envapi.Outcome) envapi.Outcome {
	o.Message = boundMessage(o.Message)
	if o.Error != nil && (len(o.Error.Message) > maxFailureMessage || !utf8.ValidString(o.Error.Message)) {
		e := *o.Error
		e.Message = boundMessage(e.Message)
		o.Error = &e
	}
	return o
}
