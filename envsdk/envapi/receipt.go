package envapi

import "encoding/json"

// ReceiptType discriminates receipts.
type ReceiptType string

// Receipt types.
const (
	ReceiptAccepted ReceiptType = "accepted"
	ReceiptProgress ReceiptType = "progress"
	ReceiptResult   ReceiptType = "result"
	ReceiptReturned ReceiptType = "returned"
	ReceiptFailure  ReceiptType = "failure"
	ReceiptUnknown  ReceiptType = "unknown"
)

// Receipt is a provider's answer to one operation. Type selects which of the
// other fields are meaningful; the encoder writes only those.
type Receipt struct {
	Type ReceiptType `json:"type"`

	// OnTurnEnd of an accepted setup names the method Brain calls after
	// every turn.
	OnTurnEnd string `json:"on_turn_end,omitempty"`
	// Data of a progress receipt.
	Data json.RawMessage `json:"data,omitempty"`
	// Output of a result (required) or returned (optional) receipt.
	Output json.RawMessage `json:"output,omitempty"`

	// Code, Message, Retryable and Details of a failure; Message is also
	// the message of an unknown receipt.
	Code      string          `json:"code,omitempty"`
	Message   string          `json:"message,omitempty"`
	Retryable bool            `json:"retryable,omitempty"`
	Details   json.RawMessage `json:"details,omitempty"`
}

// Accepted builds an accepted receipt.
func Accepted() Receipt { return Receipt{Type: ReceiptAccepted} }

// AcceptedOnTurnEnd builds an accepted setup receipt that registers method
// for turn completion.
func AcceptedOnTurnEnd(method string) Receipt {
	return Receipt{Type: ReceiptAccepted, OnTurnEnd: method}
}

// Progress builds a progress receipt.
func Progress(data json.RawMessage) Receipt { return Receipt{Type: ReceiptProgress, Data: data} }

// Result builds a result receipt. A nil output is sent as JSON null.
func Result(output json.RawMessage) Receipt {
	if output == nil {
		output = json.RawMessage("null")
	}
	return Receipt{Type: ReceiptResult, Output: output}
}

// Returned builds a returned receipt; output may be nil.
func Returned(output json.RawMessage) Receipt { return Receipt{Type: ReceiptReturned, Output: output} }

// Failure builds a failure receipt; the message is truncated to
// MaxMessageLen and details may be nil.
func Failure(code, message string, retryable bool, details json.RawMessage) Receipt {
	return Receipt{Type: ReceiptFailure, Code: code, Message: Truncate(message), Retryable: retryable, Details: details}
}

// Unknown builds an unknown receipt: dispatch may have happened but no
// reliable result is available.
func Unknown(message string) Receipt {
	return Receipt{Type: ReceiptUnknown, Message: Truncate(message)}
}

type (
	acceptedWire struct {
		Type      ReceiptType `json:"type"`
		OnTurnEnd string      `json:"on_turn_end,omitempty" validate:"omitempty,identifier"`
	}
	progressWire struct {
		Type ReceiptType     `json:"type"`
		Data json.RawMessage `json:"data" validate:"required"`
	}
	resultWire struct {
		Type   ReceiptType     `json:"type"`
		Output json.RawMessage `json:"output" validate:"required"`
	}
	returnedWire struct {
		Type   ReceiptType     `json:"type"`
		Output json.RawMessage `json:"output,omitempty"`
	}
	failureWire struct {
		Type      ReceiptType     `json:"type"`
		Code      string          `json:"code" validate:"identifier"`
		Message   string          `json:"message" validate:"max=4096"`
		Retryable *bool           `json:"retryable" validate:"required"`
		Details   json.RawMessage `json:"details,omitempty"`
	}
	unknownWire struct {
		Type    ReceiptType `json:"type"`
		Message string      `json:"message" validate:"max=4096"`
	}
)

// MarshalJSON writes only the fields that belong to r.Type. A failure always
// carries "retryable".
func (r Receipt) MarshalJSON() ([]byte, error) {
	switch r.Type {
	case ReceiptAccepted:
		return json.Marshal(acceptedWire{r.Type, r.OnTurnEnd})
	case ReceiptProgress:
		return json.Marshal(progressWire{r.Type, orNull(r.Data)})
	case ReceiptResult:
		return json.Marshal(resultWire{r.Type, orNull(r.Output)})
	case ReceiptReturned:
		return json.Marshal(returnedWire{r.Type, r.Output})
	case ReceiptFailure:
		retry := r.Retryable
		return json.Marshal(failureWire{r.Type, r.Code, r.Message, &retry, r.Details})
	case ReceiptUnknown:
		return json.Marshal(unknownWire{r.Type, r.Message})
	}
	return json.Marshal(struct {
		Type ReceiptType `json:"type"`
	}{r.Type})
}

// UnmarshalJSON decodes strictly; see DecodeReceipt.
func (r *Receipt) UnmarshalJSON(data []byte) error {
	v, err := decodeReceipt(data, "receipt")
	if err != nil {
		return err
	}
	*r = v
	return nil
}

// DecodeReceipt decodes one receipt strictly.
func DecodeReceipt(data []byte) (Receipt, error) { return decodeReceipt(data, "receipt") }

func decodeReceipt(data []byte, path string) (Receipt, error) {
	return decodeReceiptIn(data, path, strict)
}

// decodeReceiptIn decodes a receipt with decode (strict, or strictNoDup
// for a receipt inside a document already checked for duplicate keys).
func decodeReceiptIn(data []byte, path string, strict func([]byte, any, string) error) (Receipt, error) {
	var head struct {
		Type *ReceiptType `json:"type"`
	}
	if err := json.Unmarshal(data, &head); err != nil {
		return Receipt{}, fieldErr(path, err)
	}
	if head.Type == nil {
		return Receipt{}, &FieldError{Field: join(path, "type"), Reason: "is required"}
	}
	switch *head.Type {
	case ReceiptAccepted:
		var w acceptedWire
		if err := strict(data, &w, path); err != nil {
			return Receipt{}, err
		}
		return Receipt{Type: w.Type, OnTurnEnd: w.OnTurnEnd}, nil
	case ReceiptProgress:
		var w progressWire
		if err := strict(data, &w, path); err != nil {
			return Receipt{}, err
		}
		return Receipt{Type: w.Type, Data: w.Data}, nil
	case ReceiptResult:
		var w resultWire
		if err := strict(data, &w, path); err != nil {
			return Receipt{}, err
		}
		return Receipt{Type: w.Type, Output: w.Output}, nil
	case ReceiptReturned:
		var w returnedWire
		if err := strict(data, &w, path); err != nil {
			return Receipt{}, err
		}
		return Receipt{Type: w.Type, Output: w.Output}, nil
	case ReceiptFailure:
		var w failureWire
		if err := strict(data, &w, path); err != nil {
			return Receipt{}, err
		}
		return Receipt{Type: w.Type, Code: w.Code, Message: w.Message, Retryable: *w.Retryable, Details: w.Details}, nil
	case ReceiptUnknown:
		var w unknownWire
		if err := strict(data, &w, path); err != nil {
			return Receipt{}, err
		}
		return Receipt{Type: w.Type, Message: w.Message}, nil
	}
	return Receipt{}, &FieldError{Field: join(path, "type"), Reason: "unknown receipt type " + quote(string(*head.Type)), Unsupported: true}
}

// Response is a provider's answer to a Command.
type Response struct {
	Contract string  `json:"contract"`
	Sequence uint64  `json:"sequence"`
	Receipt  Receipt `json:"receipt"`
}

// NewResponse answers the operation with seq.
func NewResponse(seq uint64, r Receipt) Response {
	return Response{Contract: Contract, Sequence: seq, Receipt: r}
}

type responseWire struct {
	Contract *string         `json:"contract" validate:"required"`
	Sequence uint64          `json:"sequence" validate:"min=1"`
	Receipt  json.RawMessage `json:"receipt" validate:"required"`
}

// DecodeResponse decodes a provider's response strictly.
func DecodeResponse(data []byte) (Response, error) {
	var w responseWire
	if err := strict(data, &w, ""); err != nil {
		return Response{}, err
	}
	if *w.Contract != Contract {
		return Response{}, &FieldError{Field: "contract", Reason: "must be " + quote(Contract) + ", got " + quote(*w.Contract)}
	}
	// strict checked the whole document for duplicate keys already.
	r, err := decodeReceiptIn(w.Receipt, "receipt", strictNoDup)
	if err != nil {
		return Response{}, err
	}
	return Response{Contract: *w.Contract, Sequence: w.Sequence, Receipt: r}, nil
}

func orNull(raw json.RawMessage) json.RawMessage {
	if len(raw) == 0 {
		return json.RawMessage("null")
	}
	return raw
}
