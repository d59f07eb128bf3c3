package envsdk_test

import (
	"encoding/json"
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/brain-in-go/brain/envsdk"
	"github.com/brain-in-go/brain/envsdk/envapi"
	"github.com/brain-in-go/brain/envsdk/envtest"
)

// longMessage is a message past envapi.MaxMessageLen, of multi-byte
// characters so that a cut can split one.
var longMessage = "disk full: " + strings.Repeat("é", 5000)

// wantCut checks that got is longMessage cut to envapi.MaxMessageLen
// bytes between characters.
func wantCut(t *testing.T, what, got string) {
	t.Helper()
	if got != envapi.Truncate(longMessage) || len(got) > envapi.MaxMessageLen || !utf8.ValidString(got) {
		t.Errorf("%s carries a %d-byte message, want the %d-byte message cut to its first %d bytes between characters",
			what, len(got), len(longMessage), envapi.MaxMessageLen)
	}
}

// longReceipts is a provider whose Execute answers, without the
// constructors, a failure or unknown receipt whose message is longer
// than a receipt carries.
type longReceipts struct{ envsdk.Base }

func (longReceipts) Execute(_ *envsdk.Ctx, x *envsdk.Execution) (envapi.Receipt, error) {
	var impl string
	_ = json.Unmarshal(x.Implementation, &impl)
	if impl == "unknown" {
		return envapi.Receipt{Type: envapi.ReceiptUnknown, Message: longMessage}, nil
	}
	return envapi.Receipt{Type: envapi.ReceiptFailure, Code: "disk_full", Message: longMessage}, nil
}

// TestLongReceiptMessageIsCut: a failure or unknown receipt whose message
// is longer than envapi.MaxMessageLen is answered with its message cut,
// its code and type kept, as the finish callback carries it.
func TestLongReceiptMessageIsCut(t *testing.T) {
	srv := serve(t, longReceipts{}, nil)
	r := send(t, srv, execute(1, "failure", nil, nil)).Receipt
	if r.Type != envapi.ReceiptFailure || r.Code != "disk_full" {
		t.Fatalf("execute answered %s %s %.80q, want the failure disk_full", r.Type, r.Code, r.Message)
	}
	wantCut(t, "the failure receipt", r.Message)
	r = send(t, srv, execute(2, "unknown", nil, nil)).Receipt
	if r.Type != envapi.ReceiptUnknown {
		t.Fatalf("execute answered %s %s %.80q, want unknown", r.Type, r.Code, r.Message)
	}
	wantCut(t, "the unknown receipt", r.Message)
}

// longFinisher finishes its Tool itself with an error or unknown outcome
// whose message is longer than a receipt carries, built without the
// constructors.
type longFinisher struct {
	envsdk.Base
	errs chan error
}

func (p *longFinisher) Execute(c *envsdk.Ctx, x *envsdk.Execution) (envapi.Receipt, error) {
	var impl string
	_ = json.Unmarshal(x.Implementation, &impl)
	o := envapi.Outcome{Status: envapi.StatusError, Error: &envapi.OutcomeError{Code: "disk_full", Message: longMessage}}
	if impl == "unknown" {
		o = envapi.Outcome{Status: envapi.StatusUnknown, Message: longMessage}
	}
	_, err := x.Invocation.Finish(c.Context(), &o)
	p.errs <- err
	if o.Message != "" && o.Message != longMessage || o.Error != nil && o.Error.Message != longMessage {
		p.errs <- errChanged
	}
	return envapi.Returned(nil), nil
}

var errChanged = envsdk.Fail("changed", "Finish changed the caller's outcome")

// TestLongFinishMessageIsCut: an outcome finished with a message longer
// than envapi.MaxMessageLen reaches Brain with its message cut, as an
// execute's receipt carries it, and the caller's outcome is left as it
// is.
func TestLongFinishMessageIsCut(t *testing.T) {
	b := envtest.NewBrain(t)
	p := &longFinisher{errs: make(chan error, 4)}
	srv := serve(t, p, nil)
	for seq, impl := range map[uint64]string{1: "error", 2: "unknown"} {
		g := b.ToolGrant("ses_1", seq)
		send(t, srv, execute(seq, impl, nil, &g))
		if err := <-p.errs; err != nil {
			t.Fatalf("Finish: %v", err)
		}
		select {
		case err := <-p.errs:
			t.Errorf("%s: %v", impl, err)
		default:
		}
		calls := b.CallsFor("ses_1", seq)
		if len(calls) != 1 || calls[0].Method != envapi.MethodFinish {
			t.Fatalf("%s: calls %v, want one finish", impl, calls)
		}
		var sent struct {
			Status  string `json:"status"`
			Message string `json:"message"`
			Error   *struct {
				Code    string `json:"code"`
				Message string `json:"message"`
			} `json:"error"`
		}
		if err := json.Unmarshal(calls[0].Input, &sent); err != nil {
			t.Fatal(err)
		}
		if impl == "unknown" {
			wantCut(t, "the finished unknown outcome", sent.Message)
			continue
		}
		if sent.Error == nil || sent.Error.Code != "disk_full" {
			t.Fatalf("finish input %.200s, want the error disk_full", calls[0].Input)
		}
		wantCut(t, "the finished error outcome", sent.Error.Message)
	}
}
