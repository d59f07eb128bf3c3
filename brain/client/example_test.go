package client_test

import (
	"context"
	"errors"
	"fmt"
	"net"
	"os"

	"github.com/brain-in-go/brain/brain"
	"github.com/brain-in-go/brain/brain/api"
	"github.com/brain-in-go/brain/brain/client"
)

// The client of the package documentation against a Brain served in this
// process: create a session, send a message, follow its events until the
// session ends.
func Example() {
	dir, err := os.MkdirTemp("", "brain-example-")
	if err != nil {
		panic(err)
	}
	defer os.RemoveAll(dir)
	ctx, stop := context.WithCancel(context.Background())
	token := "example-token"
	srv, err := brain.New(ctx, brain.Config{DataDir: dir, Token: token})
	if err != nil {
		panic(err)
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		panic(err)
	}
	served := make(chan error, 1)
	go func() { served <- srv.Serve(ctx, ln) }()
	defer func() { stop(); <-served }()

	c, err := client.New("http://"+ln.Addr().String(), &client.Options{Token: token})
	if err != nil {
		panic(err)
	}
	defer c.Close()
	s, err := c.Sessions.Create(ctx, api.CreateSessionRequest{
		Model: api.ModelConfig{Provider: "scripted", Name: "demo"},
	})
	if err != nil {
		panic(err)
	}
	sum, err := s.Send(ctx, api.UserInput{Message: "hello"})
	if err != nil {
		panic(err)
	}
	fmt.Println(sum.Status)
	if _, err := s.End(ctx); err != nil {
		panic(err)
	}
	for ev, err := range s.Events(ctx, 0, client.Follow()) {
		if err != nil {
			panic(err)
		}
		switch ev.EventType {
		case api.KindTurnEnded, api.KindSessionEnded:
			fmt.Println(ev.EventType, string(ev.Data))
		}
	}

	_, err = c.Sessions.Get(ctx, "ses_000000000000000000000000")
	var apiErr *api.ApiError
	fmt.Println(errors.As(err, &apiErr), apiErr.Code, errors.Is(err, api.ErrNotFound))
	// Output:
	// idle
	// turn_ended {"sequence":3,"result":"echo: hello"}
	// session_ended {}
	// true not_found true
}
