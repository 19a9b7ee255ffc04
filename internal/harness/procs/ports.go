package procs

import "net"

// FreeAddr picks a free loopback address, "127.0.0.1:port". The port is
// free when it returns and is taken by the child it is handed to moments
// later; on loopback nothing else races for it in practice.
func FreeAddr() (string, error) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return "", err
	}
	defer l.Close()
	return l.Addr().String(), nil
}

// FreePort is FreeAddr's port, for a child that takes a port alone.
func FreePort() (int, error) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return 0, err
	}
	defer l.Close()
	return l.Addr().(*net.TCPAddr).Port, nil
}
