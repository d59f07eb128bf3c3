// Package model defines the model-client interface Brain's session engine
// calls, the request and result types of the model service, provider errors,
// the hosted clients and the scripted model.
//
// # Providers
//
// New(Config) answers the Opener of every provider, keyed by the session's
// model.provider:
//
//   - "scripted": the offline model, steered by the latest user message, so
//     that every engine path can be exercised without a network;
//   - "openai": the OpenAI Responses API ({base}/responses), stateless
//     (store:false) with encrypted reasoning replayed as native blocks of
//     format "openai.responses.v1" (asked for from every model but the
//     families that do not reason and refuse it: gpt-4*, gpt-3.5*,
//     chatgpt-*, gpt-5-chat*, a fine-tune ("ft:") or a gateway's
//     namespaced name ("openai/") judged by its base model); the option
//     operation "compact" posts
//     the conversation to {base}/responses/compact instead (model, input
//     and instructions only) and answers the compacted items verbatim as
//     native blocks;
//   - "openai_chat": OpenAI Chat Completions ({base}/chat/completions), the
//     dialect of local servers (llama.cpp, vLLM, Ollama); it shares the
//     openai base URL. max_output_tokens is sent as max_tokens, except to
//     OpenAI and Azure OpenAI hosts, which take max_completion_tokens;
//   - "anthropic": the Anthropic Messages API ({base}/messages, header
//     anthropic-version), thinking blocks kept as native blocks of format
//     "anthropic.messages.v1".
//
// Every hosted call streams (server-sent events, their lines ended by
// CRLF, LF or a lone CR): text fragments reach the caller's delta
// callback as they arrive, and the result is assembled from the stream.
// The session's API key is the credential (Bearer for OpenAI,
// x-api-key for Anthropic), sent without the spaces or tabs a pasted key
// may have around it; it is removed from every error message, as
// sent and in the forms an echo may give it (JSON-escaped, URL-encoded),
// and so is what is left of it where the error-body bound cut an echoed
// key short (a tool call's id or name that an error quotes is cleared of
// it too, and shortened); a key holding a control character (which no header can
// carry) is refused when the client is opened. A redirect is never
// followed: it would send the conversation and the key elsewhere; it fails
// the call, naming where it pointed. A base URL that is refused is not
// shown with its user information, query or fragment, where a credential
// may be.
//
// # Mapping
//
// Brain messages map to the dialect's turns: text, image and file blocks
// (by URL), tool_use blocks to function calls, tool_result blocks to
// function outputs (a JSON string content is sent as its value, other JSON
// as text; a failed result with no text goes to Anthropic as its JSON
// text, "" or null, as the Messages API refuses a failed result without
// content). Native blocks go back only to the dialect that produced them
// (a Responses reasoning item without its id, as the message and function
// calls after it go back without theirs). Anthropic user turns lead with
// their tool_result blocks, and whitespace-only assistant text is left out,
// as the Messages API requires; Chat Completions tool messages follow the
// assistant message that called, ahead of any message the transcript holds
// between them, and an assistant message right after one with tool calls
// joins it (its text and calls after the earlier ones), as Chat
// Completions requires. A tool's input schema that
// names no type is sent with type "object", which every dialect requires.
// A Chat Completions tool call is told apart by its index, or by a new id
// at an index already in use (Ollama numbers every streamed call 0).
// Stop reasons map to end_turn, tool_use, max_tokens, stop_sequence, refusal
// or unknown; usage maps to input (uncached), cache read/creation, total
// input, output and reasoning tokens, leaving out what no count can be (a
// count below zero, the uncached input of more cached input than input
// in all, a total too large to hold). Options are checked per dialect
// (Anthropic: thinking, output_config, temperature, top_p, top_k,
// stop_sequences; Responses: operation, reasoning, temperature, top_p;
// Chat: temperature, top_p, stop, seed, frequency_penalty, presence_penalty, reasoning_effort)
// and never override the model, destination or credentials; a
// max_output_tokens below 1 is refused, and so, by Responses and
// Anthropic, is a tool name of other than letters, digits, '_' and '-'
// (or, by Responses, longer than 64). Prepare checks and encodes a
// request without sending anything: it refuses exactly what Call would
// refuse as ErrInvalidRequest, so that the engine refuses such a request
// before it records a model call, and the Prepared request it answers
// sends the bytes it encoded, without building them again (Call is Prepare
// and send). Check answers Prepare's error alone.
//
// # Errors and bounds
//
// A non-2xx answer or an error event is a *ProviderError carrying the
// provider's code and its retryable verdict (429, 408 and 5xx, overload and
// server errors are retryable, except a 429 for an exhausted quota or spend
// limit, error type insufficient_quota, or for a request larger than the
// tokens-per-minute limit allows at all, "Request too large", and an
// Anthropic 429 whose error type is not a rate limit but one of the
// Messages API's final errors, such as request_too_large or
// invalid_request_error; other 4xx are not; an error event whose code is
// a number, as local servers give it, is judged by that HTTP status too)
// and, for a retryable answer, the wait its Retry-After (or
// retry-after-ms) header asked for, a day at most (a number too large to
// read asks for a day). The provider's message is kept as the engine
// records it, where it is decoded: one longer than MaxMessageBytes is
// kept as its head, cut between characters, with the length of the
// whole (CutMessage), so that neither the error nor the text it answers
// holds more of it; the provider's code is shortened as a quoted name is.
// A stream that ends before its final event, or inside an event that
// then cannot be read, or whose connection breaks off after the answer
// began (as an answer read whole does), is stream_truncated (retryable);
// connection_failed is a call that no answer reached.
// Nothing is ever retried here, nor by the HTTP client: a call whose
// body went out is never sent again (as HTTP/2 would after the server
// reset its stream). A call that fails after the provider began
// to answer is a *PartialError around that failure, holding the stop
// reason and the usage counted so far (complete only for a whole answer
// that could not be used). Tool calls in a length-limited, refused or
// unknown-stop response are an *OutputError model_output_incomplete; tool
// input that is not a JSON object, or a tool call naming no tool, in an
// otherwise complete response is model_output_invalid (the scripted model
// answers a scripted one so too). Every call is bounded by Limits: output
// bytes (every content block counting what it adds to the message, so
// that many empty blocks do not make a message beyond the bound), delta
// bytes (longer fragments are split), stream bytes, event
// bytes, error-body bytes, connect time and total time.
package model
