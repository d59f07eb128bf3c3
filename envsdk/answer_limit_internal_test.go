package envsdk

import (
	"encoding/json"
	"math"
	"strings"
	"testing"

	"github.com/brain-in-go/brain/envsdk/envapi"
)

// TestAnswerBodyBound: an answer of exactly envapi.MaxResponseBytes
// (its final newline included) is sent as it is; one byte more and the
// answer is the failure output_limit, which Brain decodes and takes,
// naming the receipt it replaces (a failure's code too) and the sizes.
func TestAnswerBodyBound(t *testing.T) {
	const seq = 7
	op := envapi.Operation{Sequence: seq, Request: envapi.Request{Type: envapi.RequestExecute}}
	str := func(n int) json.RawMessage { return json.RawMessage(`"` + strings.Repeat("x", n-2) + `"`) }
	empty, err := encodeAnswer(seq, envapi.Result(str(2)))
	if err != nil {
		t.Fatal(err)
	}
	fits := envapi.MaxResponseBytes - (len(empty) - 2)

	data, sent, replaced := answerBody(seq, envapi.Result(str(fits)), envapi.MaxResponseBytes)
	if replaced || sent.Type != envapi.ReceiptResult || len(data) != envapi.MaxResponseBytes {
		t.Fatalf("an answer of exactly the bound: replaced %v, %s, %d bytes, want the result in %d bytes",
			replaced, sent.Type, len(data), envapi.MaxResponseBytes)
	}

	type tooLarge struct {
		Receipt     envapi.ReceiptType `json:"receipt"`
		Code        string             `json:"code"`
		AnswerBytes int                `json:"answer_bytes"`
		LimitBytes  int                `json:"limit_bytes"`
	}
	for _, tc := range []struct {
		r    envapi.Receipt
		want tooLarge
	}{
		{envapi.Result(str(fits + 1)), tooLarge{envapi.ReceiptResult, "", envapi.MaxResponseBytes + 1, envapi.MaxResponseBytes}},
		{envapi.Failure("broken", "with evidence", false, str(envapi.MaxResponseBytes)), tooLarge{Receipt: envapi.ReceiptFailure, Code: "broken", LimitBytes: envapi.MaxResponseBytes}},
	} {
		data, sent, replaced := answerBody(seq, tc.r, envapi.MaxResponseBytes)
		if !replaced || len(data) > envapi.MaxResponseBytes {
			t.Fatalf("an oversized %s answer: replaced %v, %d bytes", tc.r.Type, replaced, len(data))
		}
		resp, err := envapi.DecodeResponse(data)
		if err == nil {
			err = envapi.CheckResponse(op, resp)
		}
		if err != nil {
			t.Fatalf("the answer replacing an oversized %s is one Brain refuses: %v", tc.r.Type, err)
		}
		if got := resp.Receipt; got.Type != envapi.ReceiptFailure || got.Code != envapi.CodeOutputLimit || got.Code != sent.Code || string(got.Details) != string(sent.Details) {
			t.Fatalf("an oversized %s answered %+v (sent %+v), want the failure output_limit", tc.r.Type, resp.Receipt, sent)
		}
		var got tooLarge
		if err := json.Unmarshal(sent.Details, &got); err != nil {
			t.Fatal(err)
		}
		if tc.want.AnswerBytes == 0 {
			tc.want.AnswerBytes = got.AnswerBytes // the details' encoding decides it
		}
		if got != tc.want || got.AnswerBytes <= envapi.MaxResponseBytes {
			t.Errorf("details %s, want %+v", sent.Details, tc.want)
		}
	}
}

// Any positive Options.MaxAnswerBytes is the bound, up to the largest
// answer an int counts: none is left for Brain's smaller default.
func TestAnswerBoundOfAnyInt64(t *testing.T) {
	for _, tc := range []struct {
		opt  int64
		want int
	}{
		{0, envapi.MaxResponseBytes},
		{-1, envapi.MaxResponseBytes},
		{4 << 10, 4 << 10},
		{math.MaxInt32, math.MaxInt32},
		{1 << 31, int(min(1<<31, int64(math.MaxInt)))},
		{math.MaxInt64, math.MaxInt},
	} {
		h := NewHandler(Base{}, &Options{MaxAnswerBytes: tc.opt}).(*handler)
		if h.maxAnswer != tc.want {
			t.Errorf("MaxAnswerBytes %d bounds answers at %d bytes, want %d", tc.opt, h.maxAnswer, tc.want)
		}
	}
}
