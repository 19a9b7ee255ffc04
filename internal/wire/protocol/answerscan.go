package protocol

import "strconv"

// answerNames are the keys OutputTokens reads, at any level: a key that
// matches one only without regard to case sends the answer to the
// decoder, which matches keys that way.
var answerNames = byteSlices([]string{"usage", "completion_tokens", "output_tokens", "choices", "finish_reason", "stop_reason",
	"prompt_tokens", "input_tokens", "cache_creation_input_tokens", "cache_read_input_tokens",
	"prompt_tokens_details", "input_tokens_details", "cached_tokens"})

// scanAnswer is OutputTokens' fast path, as scanBody is ParseBody's: one
// validating pass and a walk of the few fields it reads, for an answer
// whose keys are plain ASCII and whose fields have the types the decoder
// expects (counts that are whole numbers, reasons that are plain
// strings). Any other answer returns ok false and goes to decodeAnswer,
// the reference (FuzzOutputTokens checks that both agree).
func scanAnswer(raw []byte) (a answerFields, ok bool) {
	var v JSONScanner
	if !v.Write(raw) || !v.Done() {
		return a, false
	}
	i := SkipSpace(raw, 0)
	if raw[i] != '{' {
		return a, false
	}
	ok = eachField(raw, i, answerNames, func(key []byte, at span) bool {
		val := raw[at.start:at.end]
		if !asciiKey(key) {
			return false
		}
		switch string(key) {
		case "usage":
			return val[0] == '{' && eachField(raw, at.start, answerNames, func(key []byte, at span) bool {
				val := raw[at.start:at.end]
				switch {
				case !asciiKey(key):
					return false
				case string(key) == "completion_tokens":
					a.completionTokens, a.haveCompletion = wholeNumber(val)
					return a.haveCompletion
				case string(key) == "output_tokens":
					a.outputTokens, a.haveOutput = wholeNumber(val)
					return a.haveOutput
				case string(key) == "prompt_tokens_details" || string(key) == "input_tokens_details":
					// The cached count (CachedOf); details of another
					// shape are none, as the decoder reads them raw.
					d := 0
					if key[0] == 'i' {
						d = 1
					}
					return val[0] != '{' || eachField(raw, at.start, answerNames, func(key []byte, at span) bool {
						if !asciiKey(key) {
							return false
						}
						if string(key) == "cached_tokens" {
							a.cached[d], a.haveCached[d] = wholeNumber(raw[at.start:at.end])
						}
						return true
					})
				}
				// Input counts (InputOf): one of another type is no
				// count, as the decoder reads it raw.
				for i, name := range inputNames {
					if string(key) == name {
						a.inputs[i], a.haveInputs[i] = wholeNumber(val)
					}
				}
				return true
			})
		case "choices":
			// The first choice's finish_reason; the decoder skips the
			// others unchecked.
			if val[0] != '[' {
				return false
			}
			j := SkipSpace(raw, at.start+1)
			if raw[j] == ']' {
				return true
			}
			return raw[j] == '{' && eachField(raw, j, answerNames, func(key []byte, at span) bool {
				if !asciiKey(key) {
					return false
				}
				if string(key) == "finish_reason" {
					var plain bool
					a.finishReason, plain = plainValue(raw[at.start:at.end])
					return plain
				}
				return true
			})
		case "stop_reason":
			var plain bool
			a.stopReason, plain = plainValue(val)
			return plain
		}
		return true
	})
	return a, ok
}

// asciiKey: the decoder folds non-ASCII keys by rules of its own, so such
// a key is left to it.
func asciiKey(key []byte) bool {
	for _, c := range key {
		if c >= 0x80 {
			return false
		}
	}
	return true
}

// wholeNumber is a JSON number that the decoder puts in an int as it is;
// false for anything else (a fraction, an exponent, null, a string).
func wholeNumber(v []byte) (int, bool) {
	n, err := strconv.ParseInt(string(v), 10, strconv.IntSize)
	return int(n), err == nil
}

// plainValue is a JSON string value that decodes to its own bytes; false
// for anything else (escapes, invalid UTF-8, null, a number).
func plainValue(v []byte) (string, bool) {
	if v[0] != '"' || !PlainString(v[1:len(v)-1]) {
		return "", false
	}
	return string(v[1 : len(v)-1]), true
}

// inputNames are answerFields.inputs' keys, in order.
var inputNames = [4]string{"prompt_tokens", "input_tokens", "cache_creation_input_tokens", "cache_read_input_tokens"}
