// Package openapicheck validates real HTTP responses against an OpenAPI 3.1
// document: the status code must be documented for the operation, the
// content type must be one it lists, and a JSON body must match its
// schema. Event streams (text/event-stream) are checked by content type
// only, without reading the stream. Requests for paths the document does
// not describe (another server's, or an unknown route) are not checked.
//
// Transport wraps an http.RoundTripper so that every response a test
// receives is checked; mismatches go to a callback and are kept. It is
// meant for tests, and it is the only importer of the OpenAPI validator
// library.
package openapicheck
