package envsdk_test

import (
	"encoding/json"
	"errors"
	"testing"

	"github.com/brain-in-go/brain/envsdk"
	"github.com/brain-in-go/brain/envsdk/envapi"
	"github.com/brain-in-go/brain/envsdk/envtest"
)

// emptyTranscript is an Agentloop that saves an empty transcript and
// dispatches no calls the way Go code holds an empty list: a nil slice.
type emptyTranscript struct {
	envsdk.Base
	errs chan error
}

type message struct {
	Role    string `json:"role"`
	Content string `json:"content"`
}

func (p *emptyTranscript) Execute(c *envsdk.Ctx, x *envsdk.Execution) (envapi.Receipt, error) {
	var none []message
	_, err := x.Invocation.SetTranscript(c.Context(), none)
	p.errs <- err
	var calls []envapi.ToolInvocation
	returns, err := x.Invocation.Dispatch(c.Context(), calls)
	if err == nil && returns == nil {
		err = errors.New("Dispatch answered nil returns")
	}
	p.errs <- err
	return envsdk.Output(map[string]any{})
}

// set_transcript and dispatch take arrays: an empty transcript, or no
// calls, held as a nil slice is sent as [], which Brain takes, not as
// null, which it refuses.
func TestNilSlicesAreSentAsEmptyArrays(t *testing.T) {
	b := envtest.NewBrain(t)
	p := &emptyTranscript{errs: make(chan error, 2)}
	srv := serve(t, p, nil)
	cmds := envtest.NewCommands("ses_1", "loop")
	grant := func(seq uint64) *envapi.Grant { g := b.AgentloopGrant("ses_1", seq); return &g }
	cmd := cmds.ExecuteWith(json.RawMessage(`"loop"`), json.RawMessage(`{}`), nil, grant)
	data, err := json.Marshal(cmd)
	if err != nil {
		t.Fatal(err)
	}
	send(t, srv, data)
	if err := <-p.errs; err != nil {
		t.Errorf("SetTranscript(nil slice) = %v, want the committed sequence", err)
	}
	if err := <-p.errs; err != nil {
		t.Errorf("Dispatch(nil slice) = %v, want no returns", err)
	}
	for _, method := range []string{envapi.MethodSetTranscript, envapi.MethodDispatch} {
		calls := b.Filter(envtest.Method(method))
		if len(calls) != 1 || string(calls[0].Input) != "[]" {
			t.Errorf("%s calls %v, want one whose input is []", method, calls)
		}
	}
}
