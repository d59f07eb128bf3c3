package docker

import (
	"context"
	"errors"
	"fmt"

	"github.com/docker/docker/api/types"
	"github.com/docker/docker/api/types/container"
	"github.com/docker/docker/client"
)

// errAttachAbandoned reports an exec start whose answer had not come from
// the Engine when the context ended. The start may have reached the
// Engine, so the command may run.
var errAttachAbandoned = errors.New("the Engine had not answered the exec's start")

// attach starts the exec id and attaches to its stream. The Engine
// client's start request does not end with its context once it is sent:
// it waits for the Engine's answer however long that takes, and a stop
// (a deadline, a cancel, the kill budget) would wait with it. attach
// therefore answers errAttachAbandoned (wrapping ctx's error) as soon as
// ctx ends; a stream the Engine opens later is handed to late, which must
// close it (nil: it is closed at once).
func attach(ctx context.Context, cli *client.Client, id string, late func(types.HijackedResponse)) (types.HijackedResponse, error) {
	type answer struct {
		att types.HijackedResponse
		err error
	}
	got := make(chan answer, 1)
	go func() {
		att, err := cli.ContainerExecAttach(ctx, id, container.ExecAttachOptions{})
		got <- answer{att, err}
	}()
	select {
	case a := <-got:
		return a.att, a.err
	case <-ctx.Done():
	}
	go func() {
		a := <-got
		if a.err != nil {
			return
		}
		if late == nil {
			a.att.Close()
			return
		}
		late(a.att)
	}()
	return types.HijackedResponse{}, fmt.Errorf("%w: %w", errAttachAbandoned, ctx.Err())
}
