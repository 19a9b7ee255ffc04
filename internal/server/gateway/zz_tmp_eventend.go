package gateway

// eventEnd is the length of b's first event with its blank line.
func eventEnd(b []byte) int {
	for i := 0; i+1 < len(b); i++ {
		if b[i] != '\n' {
			continue
		}
		switch {
		case b[i+1] == '\n':
			return i + 2
		case b[i+1] == '\r' && i+2 < len(b) && b[i+2] == '\n':
			return i + 3
		}
	}
	return len(b)
}
