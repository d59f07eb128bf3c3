package main

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"time"

	restate "github.com/restatedev/sdk-go"
	"github.com/restatedev/sdk-go/server"
)

// Session is the Restate virtual object of one client: a turn's model
// steps are restate.Run blocks and its tool calls restate.RunAsync
// blocks, each journaled by the Restate server before the handler goes
// on; the turn count is object state.
type Session struct {
	echo string
	hc   *http.Client
}

// W1 runs one model step and answers.
func (s *Session) W1(ctx restate.ObjectContext, msg string) (string, error) {
	reply, err := restate.Run(ctx, func(restate.RunContext) (string, error) { return "echo: " + msg, nil })
	if err != nil {
		return "", err
	}
	n, err := restate.Get[int](ctx, "turns")
	if err != nil {
		return "", err
	}
	restate.Set(ctx, "turns", n+1)
	return reply, nil
}

// W2 runs a model step, 4 parallel tool calls to the echo, a model step.
func (s *Session) W2(ctx restate.ObjectContext, msg string) (string, error) {
	if _, err := restate.Run(ctx, func(restate.RunContext) (string, error) { return "tool_use x4", nil }); err != nil {
		return "", err
	}
	futs := make([]restate.RunAsyncFuture[string], 4)
	for i := range futs {
		futs[i] = restate.RunAsync(ctx, func(rc restate.RunContext) (string, error) { return callEcho(rc, s.hc, s.echo, i) })
	}
	results := ""
	for _, f := range futs {
		r, err := f.Result()
		if err != nil {
			return "", err
		}
		results += r
	}
	reply, err := restate.Run(ctx, func(restate.RunContext) (string, error) { return "done", nil })
	if err != nil {
		return "", err
	}
	n, err := restate.Get[int](ctx, "turns")
	if err != nil {
		return "", err
	}
	restate.Set(ctx, "turns", n+1)
	return reply, nil
}

type restatePeer struct {
	ingress string
	hc      *http.Client
	run     int64
}

func newRestate(ctx context.Context, ingress, admin, echo string) (*restatePeer, error) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return nil, err
	}
	h, err := server.NewRestate().WithLogger(slog.NewTextHandler(io.Discard, nil), true).Bind(restate.Reflect(&Session{echo: echo, hc: &http.Client{}})).Handler()
	if err != nil {
		return nil, err
	}
	go func() { _ = serveH2C(ln, h) }()
	body := fmt.Sprintf(`{"uri":"http://%s","force":true}`, ln.Addr().String())
	var resp *http.Response
	for i := 0; ; i++ {
		resp, err = http.Post(admin+"/deployments", "application/json", bytes.NewBufferString(body))
		if err == nil && resp.StatusCode/100 == 2 {
			resp.Body.Close()
			break
		}
		if resp != nil {
			b, _ := io.ReadAll(resp.Body)
			resp.Body.Close()
			err = fmt.Errorf("register deployment: %s %s", resp.Status, b)
		}
		if i == 50 {
			return nil, err
		}
		time.Sleep(200 * time.Millisecond)
	}
	return &restatePeer{ingress: ingress, hc: &http.Client{Transport: &http.Transport{MaxIdleConnsPerHost: 128}}, run: time.Now().UnixNano()}, nil
}

func (r *restatePeer) name() string { return "restate" }

func (r *restatePeer) client(ctx context.Context, w string, c int) (func(context.Context) error, error) {
	url := fmt.Sprintf("%s/Session/s-%d-%d/%s", r.ingress, r.run, c, w)
	return func(ctx context.Context) error {
		req, err := http.NewRequestWithContext(ctx, http.MethodPost, url, bytes.NewBufferString(`"hello"`))
		if err != nil {
			return err
		}
		req.Header.Set("Content-Type", "application/json")
		resp, err := r.hc.Do(req)
		if err != nil {
			return err
		}
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		if resp.StatusCode != http.StatusOK {
			return fmt.Errorf("restate %s: %s %s", w, resp.Status, b)
		}
		return nil
	}, nil
}
