// Package catalog is the models catalogue that GET /v1/models answers: the
// providers a session may pin, the dialect each speaks, the media inputs it
// carries and the models it is known to offer.
//
// The catalogue starts from a snapshot embedded in the binary (snapshot.json,
// no runtime fetch) and is merged with the operator's providers file
// (BRAIN_PROVIDERS_FILE), whose entries add providers or supersede a
// snapshot provider of the same name. A model name the catalogue does not
// list still passes admission: the list says what is known, not what is
// allowed.
//
// # Providers file
//
// A regular file (a named pipe, a directory or a device is refused, never
// waited on) of at most 1 MiB of UTF-8 text without a byte order mark,
// holding one JSON object; members given twice, unknown ones and ones
// whose names differ from a field's only in case are refused. A refusal
// says where the file goes wrong: the line and column of a syntax error,
// the path of an unknown member, and of a member of the wrong type
// (providers[1].models) with what it should hold:
//
//	{"providers": [{
//	  "name": "my-gateway",                   // ^[A-Za-z0-9][A-Za-z0-9._:-]{0,127}$, not "scripted"
//	  "dialect": "openai_chat_completions",   // openai_responses | openai_chat_completions | anthropic_messages
//	  "base_url": "http://127.0.0.1:8000/v1", // http or https, no credentials, query, fragment or white space; a port from 1 to 65535
//	  "models": [{"id": "llama-3.1-8b", "context_window_tokens": 131072}]
//	}]}
//
// Names are unique within the file; a provider lists at most 10000 models
// with unique ids of 1 to 256 bytes free of white space, control and
// format characters (Unicode ones included: zero-width characters and
// bidirectional overrides, say).
//
// # Wire shape
//
// GET /v1/models (served by httpapi) answers a ModelList:
//
//	{"snapshot_digest": "sha256:<hex>",
//	 "providers": [{"id", "dialect", "media_inputs": ["image", "file"], "models": [{"id", "context_window_tokens"?}]}]}
//
// with providers sorted by id. snapshot_digest is the SHA-256 of the merged
// catalogue's canonical JSON, so it changes whenever the providers file
// changes what is offered. ?provider=<id> answers only that provider (404
// not_found for an unknown one, 400 invalid_request for a malformed id).
package catalog
