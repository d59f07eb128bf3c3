package netutil

import "testing"

func TestLoopbackHost(t *testing.T) {
	for host, want := range map[string]bool{
		"127.0.0.1:8080": true, "localhost": true, "LOCALHOST.": true, "app.localhost:1": true,
		"[::1]:9": true, "::1": true, "127.8.9.10": true,
		"attacker.example:8080": false, "attacker.example": false, "10.0.0.1:80": false,
		"localhost.attacker.example": false, "": false, "[::ffff:10.0.0.1]:1": false, "0.0.0.0": false,
	} {
		if got := LoopbackHost(host); got != want {
			t.Errorf("LoopbackHost(%q) = %v, want %v", host, got, want)
		}
	}
}
