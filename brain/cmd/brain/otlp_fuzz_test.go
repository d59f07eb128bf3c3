package main

import (
	"net/url"
	"strings"
	"testing"
)

// otlpVariables are the variables otlpFromEnv reads other than the
// headers and the resource attributes.
var otlpVariables = []string{
	"OTEL_EXPORTER_OTLP_ENDPOINT", "OTEL_EXPORTER_OTLP_PROTOCOL", "OTEL_EXPORTER_OTLP_INSECURE",
	"OTEL_EXPORTER_OTLP_TIMEOUT", "OTEL_EXPORTER_OTLP_COMPRESSION",
	"OTEL_EXPORTER_OTLP_TRACES_ENDPOINT", "OTEL_EXPORTER_OTLP_TRACES_TIMEOUT", "OTEL_EXPORTER_OTLP_LOGS_INSECURE",
	"OTEL_TRACES_EXPORTER", "OTEL_LOGS_EXPORTER", "OTEL_SERVICE_NAME", "OTEL_SDK_DISABLED",
}

// FuzzOTLPFromEnv reads any values of the OTEL_* variables: never a
// panic; an error names a variable and never quotes a header or resource
// attribute value (they carry credentials), as it is written or decoded;
// headers that parse are the values the variable spells.
func FuzzOTLPFromEnv(f *testing.F) {
	f.Add("api-key=sekrit%2C1,x-tenant=t", "deployment=eu-west-credential", uint8(0), "http://collector:4318")
	f.Add("api-key=sekrit-value,broken", "k=v", uint8(2), "yes")
	f.Add("api-key=%zz-sekrit-value", "=v", uint8(3), "-1")
	f.Add(",,a=b%20c,", "service.name=x,", uint8(8), "jaeger")
	f.Add("k==x%3D%3Dtoken-value", "a=b", uint8(4), "brotli")
	f.Fuzz(func(t *testing.T, headers, attrs string, which uint8, value string) {
		other := otlpVariables[int(which)%len(otlpVariables)]
		vars := map[string]string{
			"OTEL_EXPORTER_OTLP_TRACES_HEADERS": headers,
			"OTEL_RESOURCE_ATTRIBUTES":          attrs,
			other:                               value,
		}
		o, err := otlpFromEnv(func(k string) (string, bool) { v, ok := vars[k]; return v, ok })
		if err == nil {
			for k, v := range o.TracesHeaders {
				if !strings.Contains(headers, k) {
					t.Fatalf("header %q=%q is not in %q", k, v, headers)
				}
			}
			return
		}
		if !strings.Contains(err.Error(), "OTEL_") {
			t.Fatalf("error %q names no variable", err)
		}
		for _, list := range []string{headers, attrs} {
			for _, pair := range strings.Split(list, ",") {
				key, raw, ok := strings.Cut(pair, "=")
				raw = strings.TrimSpace(raw)
				// A key is named by the errors: a value spelled within
				// it is not looked for.
				if !ok || len(raw) < 6 || strings.Contains(value, raw) || strings.Contains(other, raw) || strings.Contains(key, raw) {
					continue
				}
				secrets := []string{raw}
				if dec, err := url.PathUnescape(raw); err == nil && len(dec) >= 6 && !strings.Contains(value, dec) && !strings.Contains(key, dec) {
					secrets = append(secrets, dec)
				}
				for _, s := range secrets {
					if strings.Contains(err.Error(), s) {
						t.Fatalf("error %q quotes the value %q", err, s)
					}
				}
			}
		}
	})
}
