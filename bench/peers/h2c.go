package main

import (
	"net"
	"net/http"
)

// serveH2C serves h over HTTP/2 without TLS (and HTTP/1.1), as the Restate
// server calls service deployments.
func serveH2C(ln net.Listener, h http.Handler) error {
	var p http.Protocols
	p.SetHTTP1(true)
	p.SetUnencryptedHTTP2(true)
	srv := &http.Server{Handler: h, Protocols: &p}
	return srv.Serve(ln)
}
