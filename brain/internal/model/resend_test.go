package model

import (
	"context"
	"encoding/binary"
	"io"
	"net"
	"net/http"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/brain-in-go/brain/brain/api"
)

// TestStreamResetNotResent: an HTTP/2 server (a gateway, say) that reads
// a whole model call and then resets its stream with PROTOCOL_ERROR may
// have begun the call; the call fails and is not sent again, though Go's
// HTTP/2 transport resends a request it can rewind after such a reset.
func TestStreamResetNotResent(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { ln.Close() })
	var calls atomic.Int32
	go serveResets(ln, &calls)

	tr := &http.Transport{Protocols: new(http.Protocols)}
	tr.Protocols.SetUnencryptedHTTP2(true) // HTTP/2 without TLS, as the server speaks it
	t.Cleanup(tr.CloseIdleConnections)
	base := "http://" + ln.Addr().String() + "/v1"
	p, err := New(Config{OpenAIBaseURL: base, AnthropicBaseURL: base, HTTPClient: &http.Client{Transport: tr},
		Limits: Limits{Timeout: 5 * time.Second}})
	if err != nil {
		t.Fatal(err)
	}
	for _, d := range dialects {
		t.Run(d.provider, func(t *testing.T) {
			c, err := p.Open(Spec{Provider: d.provider, Name: d.model, APIKey: testKey})
			if err != nil {
				t.Fatal(err)
			}
			before := calls.Load()
			_, err = c.Call(context.Background(), Request{Messages: []api.Message{api.UserMessage(api.UserInput{Message: "Book a table"})}}, nil)
			if err == nil {
				t.Fatal("a reset stream answered a result")
			}
			if n := calls.Load() - before; n != 1 {
				t.Errorf("the server received the call %d times, want once (err: %v)", n, err)
			}
			if msg := err.Error(); strings.Contains(msg, "GetBody") {
				t.Errorf("the error advises on Go's HTTP client: %v", err)
			}
		})
	}
}

// serveResets speaks just enough HTTP/2 (prior knowledge, no TLS) to read
// each request whole, count it, and reset its stream with PROTOCOL_ERROR.
func serveResets(ln net.Listener, calls *atomic.Int32) {
	for {
		conn, err := ln.Accept()
		if err != nil {
			return
		}
		go func() {
			defer conn.Close()
			preface := make([]byte, len("PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n"))
			if _, err := io.ReadFull(conn, preface); err != nil {
				return
			}
			const (
				frameData, frameHeaders, frameReset, frameSettings = 0x0, 0x1, 0x3, 0x4
				flagEndStream, flagAck                             = 0x1, 0x1
				protocolError                                      = 0x1
			)
			write := func(typ, flags byte, stream uint32, payload []byte) error {
				h := make([]byte, 9, 9+len(payload))
				h[0], h[1], h[2] = byte(len(payload)>>16), byte(len(payload)>>8), byte(len(payload))
				h[3], h[4] = typ, flags
				binary.BigEndian.PutUint32(h[5:], stream)
				_, err := conn.Write(append(h, payload...))
				return err
			}
			if write(frameSettings, 0, 0, nil) != nil {
				return
			}
			head := make([]byte, 9)
			for {
				if _, err := io.ReadFull(conn, head); err != nil {
					return
				}
				n := int(head[0])<<16 | int(head[1])<<8 | int(head[2])
				typ, flags, stream := head[3], head[4], binary.BigEndian.Uint32(head[5:])&0x7fffffff
				if _, err := io.CopyN(io.Discard, conn, int64(n)); err != nil {
					return
				}
				switch {
				case typ == frameSettings && flags&flagAck == 0:
					if write(frameSettings, flagAck, 0, nil) != nil {
						return
					}
				case (typ == frameHeaders || typ == frameData) && flags&flagEndStream != 0:
					// The whole request arrived: it may have been acted on.
					calls.Add(1)
					if write(frameReset, 0, stream, binary.BigEndian.AppendUint32(nil, protocolError)) != nil {
						return
					}
				}
			}
		}()
	}
}
