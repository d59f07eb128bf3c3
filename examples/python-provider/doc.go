// Package pythonprovider holds an environment/v1 provider written in Python
// with the standard library only (provider.py), the conformance profile
// that describes it (profile.json), and the Go tests that keep it
// conformant the way a provider's own CI would check it: through
// TestRemote of the conformance package, through the brain conformance
// command, through the brain container image built from
// examples/ci/Dockerfile, and through the job of examples/ci/gitlab-ci.yml
// run as GitLab Runner's Docker executor runs it.
// testdata/broken_provider.py is a deliberately broken copy (no
// authentication, a wrong sequence in every answer) that must fail
// exactly the matching cases.
//
// The package has no Go API; run the provider with
//
//	python3 examples/python-provider/provider.py --listen 127.0.0.1:8090 --token "$PROVIDER_TOKEN"
package pythonprovider
