// Package protocol knows the two wire dialects Sluice speaks, OpenAI's and
// Anthropic's: which paths belong to which, how each shapes an error, and
// how to read and rewrite the few request fields the gateway needs
// without disturbing the rest of the body.
package protocol
