package envsdk

import (
	"encoding/json"
	"fmt"

	"github.com/brain-in-go/brain/envsdk/envapi"
)

// encodeAnswer encodes the answer to operation seq with receipt r as the
// handler writes it, ended by a newline.
func encodeAnswer(seq uint64, r envapi.Receipt) ([]byte, error) {
	data, err := json.Marshal(envapi.NewResponse(seq, r))
	if err != nil {
		return nil, err
	}
	return append(data, '\n'), nil
}

// oversized answers the failure output_limit that replaces r when the
// answer to operation seq with r would be larger than limit, the bytes
// Brain takes: Brain would record such an answer as an invalid receipt,
// the operation's outcome unknown, though the provider knows it failed.
// over is false when the answer fits.
func oversized(seq uint64, r envapi.Receipt, limit int) (failure envapi.Receipt, over bool) {
	data, err := encodeAnswer(seq, r)
	if err != nil || len(data) <= limit {
		return envapi.Receipt{}, false
	}
	return tooLargeFailure(r, len(data), limit), true
}

// tooLargeFailure is the failure output_limit that replaces r, whose
// answer would take size bytes of the limit Brain takes.
func tooLargeFailure(r envapi.Receipt, size, limit int) envapi.Receipt {
	what := string(r.Type)
	if r.Type == envapi.ReceiptFailure {
		what += " " + r.Code
	}
	details, _ := json.Marshal(struct {
		Receipt     envapi.ReceiptType `json:"receipt"`
		Code        string             `json:"code,omitempty"`
		AnswerBytes int                `json:"answer_bytes"`
		LimitBytes  int                `json:"limit_bytes"`
	}{r.Type, r.Code, size, limit})
	return envapi.Failure(envapi.CodeOutputLimit,
		fmt.Sprintf("the provider's %s answer of %d bytes is larger than Brain takes (%d bytes); it was not sent",
			what, size, limit), false, details)
}

// answerBody encodes the answer to operation seq with r, or with the
// failure output_limit when that answer would be larger than limit, the
// bytes Brain takes (replaced is then true); it answers the receipt it
// encoded.
func answerBody(seq uint64, r envapi.Receipt, limit int) (_ []byte, sent envapi.Receipt, replaced bool) {
	data, err := encodeAnswer(seq, r)
	if err == nil && len(data) > limit {
		r, replaced = tooLargeFailure(r, len(data), limit), true
		data, err = encodeAnswer(seq, r)
	}
	if err != nil {
		// wellFormed receipts encode; this is a last resort that
		// Brain still decodes.
		r = envapi.Failure(envapi.CodeEnvironmentFailed, "the answer does not encode: "+err.Error(), false, nil)
		data, _ = encodeAnswer(seq, r)
	}
	return data, r, replaced
}
