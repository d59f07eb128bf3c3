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

func TestDialablePort(t *testing.T) {
	for port, want := range map[string]bool{
		"": true, "1": true, "80": true, "65535": true,
		"0": false, "65536": false, "99999": false, "-1": false, "http": false, "99999999999999999999": false,
	} {
		if got := DialablePort(port); got != want {
			t.Errorf("DialablePort(%q) = %v, want %v", port, got, want)
		}
	}
}

func TestBaseURLText(t *testing.T) {
	for raw, ok := range map[string]bool{
		"https://h/v1": true, "http://127.0.0.1:9": true,
		"https://h/v1 ": false, " https://h": false, "https://h/a b": false, "https://h/v1\r": false,
		"https://h/v1\u00a0": false, "https://h/v1?": false, "https://h/v1?a=b": false, "https://h/#x": false,
	} {
		if got := BaseURLText(raw); got != ok {
			t.Errorf("BaseURLText(%q) = %v, want %v", raw, got, ok)
		}
	}
}

func TestHostName(t *testing.T) {
	for host, ok := range map[string]bool{
		"api.example": true, "127.0.0.1": true, "::1": true, "localhost": true, "bücher.example": true,
		"": false, "api.ex\u200bample": false, "api.ex\u00adample": false, "\u202eelpmaxe.ipa": false,
		"\ufeffapi.example": false, "api.example\u2060": false, "a b": false, "a\tb": false,
	} {
		if got := HostName(host); got != ok {
			t.Errorf("HostName(%q) = %v, want %v", host, got, ok)
		}
	}
}
