// Package model defines the model-client interface Brain's session engine
// calls, the request and result types of the model service, provider errors,
// and the scripted model: an offline provider whose answers are steered by
// the latest user message, so that every engine path can be exercised
// without a network.
package model
