//go:build tools

// Package externaldns pins the real external-dns that the DNS webhook integration tests run.
// Nothing here is shipped; see ../build.sh.
package externaldns

import (
	_ "sigs.k8s.io/external-dns"
)
