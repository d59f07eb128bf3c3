package agentloop

import "github.com/brain-in-go/brain/brain/internal/guestjson"

// This file and the other codec_*.go files are a reflection-free JSON
// codec for the payloads of the Wasm ABI (the TurnInput, the inputs and
// answers of the service functions and the turn answer). encoding/json
// builds its codec for a type by reflection the first time it sees the
// type, and in a fresh instance every use is the first: decoding the
// TurnInput alone cost milliseconds per activation. The codec gives the
// same results as encoding/json for these types: the encoder writes the
// same bytes as json.Marshal (HTML-safe strings, compacted RawMessage
// values, omitempty members omitted) and the decoder fills the same
// values as json.Unmarshal (null leaves scalars and structs alone, makes
// slices, maps and pointers nil and RawMessage the literal null; unknown
// members are ignored; member names match ignoring ASCII case). The tests
// compare both with encoding/json.
//
// The primitives (strings, numbers, objects, arrays, raw values) are
// guestjson's, shared with the Tool SDK; codec_<concept>.go holds the
// codecs of the brain/api types of that concept.

// encoder and decoder add the codecs of the brain/api types to the
// primitives of guestjson.
type encoder struct{ guestjson.Encoder }

// newEncoder answers an encoder with room for size bytes.
func newEncoder(size int) encoder { return encoder{guestjson.NewEncoder(size)} }

type decoder struct{ guestjson.Decoder }

// newDecoder answers a decoder of data.
func newDecoder(data []byte) decoder { return decoder{guestjson.Decoder{Data: data}} }
