//go:build tools

// Package controlplane pins the real etcd and kube-apiserver (and kube-controller-manager)
// that the integration tests run. Nothing here is shipped; see build.sh.
package controlplane

import (
	_ "go.etcd.io/etcd/server/v3"
	_ "k8s.io/kubernetes/cmd/kube-apiserver"
	_ "k8s.io/kubernetes/cmd/kube-controller-manager"
)
