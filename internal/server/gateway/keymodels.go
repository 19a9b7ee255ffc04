package gateway

// usableModels is the names of the models x's key may use, in order:
// every model without keys or for a key without a model list. A refusal
// that lists models lists these, so that it tells a client of no model
// its key may not use.
func (kr *keyring) usableModels(x *exchange) []string {
	if x.key == nil || x.key.models == nil {
		return kr.models
	}
	var out []string
	for _, n := range kr.models {
		if x.key.models[n] {
			out = append(out, n)
		}
	}
	return out
}
