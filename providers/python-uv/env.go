package pythonuv

import (
	"sort"
	"strings"
)

// DefaultEnvAllow are the environment variables passed from the provider's
// environment to uv and the Python processes; everything else is dropped.
// An entry ending in "*" is a prefix. Config.EnvAllow adds to this list.
var DefaultEnvAllow = []string{
	"PATH", "HOME", "USER", "LOGNAME", "LANG", "LANGUAGE", "LC_ALL", "LC_CTYPE", "TZ", "TMPDIR",
	"SSL_CERT_FILE", "SSL_CERT_DIR",
	"HTTP_PROXY", "HTTPS_PROXY", "NO_PROXY", "ALL_PROXY", "http_proxy", "https_proxy", "no_proxy", "all_proxy",
	"PYENV_ROOT", "PYENV_VERSION",
	"UV_CACHE_DIR", "UV_INDEX", "UV_DEFAULT_INDEX", "UV_INDEX_URL", "UV_EXTRA_INDEX_URL",
	"UV_NATIVE_TLS", "UV_OFFLINE", "UV_PYTHON", "UV_HTTP_TIMEOUT", "UV_CONCURRENT_DOWNLOADS",
}

// withheldEnv are never passed, whatever the allow-list says: the
// provider's bearer token lets whoever holds it run operations on the
// provider, a capability executed code must not get.
var withheldEnv = map[string]bool{TokenEnv: true}

// forcedEnv is always set, whatever the provider's environment says.
var forcedEnv = map[string]string{
	// Never download an interpreter: the machine's Python is used.
	"UV_PYTHON_DOWNLOADS": "never",
	// Keep stderr free of progress bars; it ends up in failure details.
	"UV_NO_PROGRESS": "1",
	"NO_COLOR":       "1",
}

// childEnv reduces parent (KEY=VALUE entries) to the allowed variables,
// less the withheld ones, and adds forced and set. set wins over parent; forcedEnv wins over both.
func childEnv(parent, allow []string, set map[string]string) []string {
	allowed := func(name string) bool {
		for _, a := range allow {
			if prefix, ok := strings.CutSuffix(a, "*"); ok {
				if strings.HasPrefix(name, prefix) {
					return true
				}
			} else if a == name {
				return true
			}
		}
		return false
	}
	vals := map[string]string{}
	var order []string
	put := func(k, v string) {
		if _, ok := vals[k]; !ok {
			order = append(order, k)
		}
		vals[k] = v
	}
	for _, kv := range parent {
		k, v, ok := strings.Cut(kv, "=")
		if !ok || k == "" || withheldEnv[k] || !allowed(k) {
			continue
		}
		put(k, v)
	}
	for _, k := range sortedKeys(set) {
		if v := set[k]; v != "" {
			put(k, v)
		}
	}
	for _, k := range sortedKeys(forcedEnv) {
		put(k, forcedEnv[k])
	}
	out := make([]string, 0, len(order))
	for _, k := range order {
		out = append(out, k+"="+vals[k])
	}
	return out
}

func sortedKeys(m map[string]string) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	return keys
}
