// Package answer turns a chat answer from one form to the other in its
// own dialect: a stream collected into the whole answer a client that
// did not stream would have had (Collect), and a whole answer written
// as the stream its vendor would have sent (Stream). Inspect reads what
// a whole answer says of itself: whether every choice finished, whether
// it is a refusal, and its usage.
//
// The response cache stores every answer whole and gives it in the form
// each request asks for, so a streamed and a whole request share an
// entry. Both directions read by meaning (a JSON tokenizer, never byte
// patterns) and are strict: a shape they do not know (a delta field, an
// event type, a block this package cannot write back) is an error, and
// such an answer is not cached, rather than given back with a part
// missing.
//
// Chat only: OpenAI's chat completions and Anthropic's Messages. The
// package is pure: no clock, no I/O.
package answer
