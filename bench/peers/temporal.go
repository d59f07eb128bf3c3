package main

import (
	"context"
	"fmt"
	"net/http"
	"time"

	"go.temporal.io/sdk/client"
	"go.temporal.io/sdk/temporal"
	"go.temporal.io/sdk/worker"
	"go.temporal.io/sdk/workflow"
)

const temporalQueue = "peers"

// acts are the activities of the Temporal workflows: a model step and a
// tool call to the echo. Every activity start and completion is recorded
// in the workflow's history by the server before the workflow goes on.
type acts struct {
	echo string
	hc   *http.Client
}

func (a *acts) Model(ctx context.Context, in string) (string, error) { return "echo: " + in, nil }

func (a *acts) Tool(ctx context.Context, n int) (string, error) {
	return callEcho(ctx, a.hc, a.echo, n)
}

func activityCtx(ctx workflow.Context) workflow.Context {
	return workflow.WithActivityOptions(ctx, workflow.ActivityOptions{
		StartToCloseTimeout: 30 * time.Second,
		RetryPolicy:         &temporal.RetryPolicy{MaximumAttempts: 1},
	})
}

// W1 is one model step and the answer.
func W1(ctx workflow.Context, msg string) (string, error) {
	ctx = activityCtx(ctx)
	var a *acts
	var reply string
	err := workflow.ExecuteActivity(ctx, a.Model, msg).Get(ctx, &reply)
	return reply, err
}

// W2 is a model step, 4 parallel tool calls, a model step.
func W2(ctx workflow.Context, msg string) (string, error) {
	ctx = activityCtx(ctx)
	var a *acts
	var step string
	if err := workflow.ExecuteActivity(ctx, a.Model, msg).Get(ctx, &step); err != nil {
		return "", err
	}
	futs := make([]workflow.Future, 4)
	for i := range futs {
		futs[i] = workflow.ExecuteActivity(ctx, a.Tool, i)
	}
	for _, f := range futs {
		var r string
		if err := f.Get(ctx, &r); err != nil {
			return "", err
		}
	}
	var reply string
	err := workflow.ExecuteActivity(ctx, a.Model, "done").Get(ctx, &reply)
	return reply, err
}

type temporalPeer struct {
	c   client.Client
	run int64
}

func newTemporal(ctx context.Context, addr, echo string) (*temporalPeer, error) {
	var c client.Client
	var err error
	for i := 0; i < 50; i++ {
		if c, err = client.Dial(client.Options{HostPort: addr, Logger: quiet{}}); err == nil {
			break
		}
		time.Sleep(200 * time.Millisecond)
	}
	if err != nil {
		return nil, err
	}
	w := worker.New(c, temporalQueue, worker.Options{MaxConcurrentActivityExecutionSize: 256, MaxConcurrentWorkflowTaskExecutionSize: 256})
	w.RegisterWorkflow(W1)
	w.RegisterWorkflow(W2)
	w.RegisterActivity(&acts{echo: echo, hc: &http.Client{}})
	if err := w.Start(); err != nil {
		return nil, err
	}
	return &temporalPeer{c: c, run: time.Now().UnixNano()}, nil
}

func (t *temporalPeer) name() string { return "temporal" }

func (t *temporalPeer) client(ctx context.Context, w string, c int) (func(context.Context) error, error) {
	wf := any(W1)
	if w == "W2" {
		wf = W2
	}
	n := 0
	return func(ctx context.Context) error {
		n++
		run, err := t.c.ExecuteWorkflow(ctx, client.StartWorkflowOptions{ID: fmt.Sprintf("s-%d-%d-%s-%d", t.run, c, w, n), TaskQueue: temporalQueue}, wf, "hello")
		if err != nil {
			return err
		}
		var out string
		return run.Get(ctx, &out)
	}, nil
}

// quiet drops the SDK's logs.
type quiet struct{}

func (quiet) Debug(string, ...any) {}
func (quiet) Info(string, ...any)  {}
func (quiet) Warn(string, ...any)  {}
func (quiet) Error(string, ...any) {}
