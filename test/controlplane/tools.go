//go:build tools

// Package controlplane pins the real etcd, kube-apiserver and kube-controller-manager that the integration tests
// run, and the node parts (kube-scheduler, kube-proxy, kubelet) of the cluster with a real Node. Nothing here is
// shipped; see build.sh.
package controlplane

import (
	_ "go.etcd.io/etcd/server/v3"
	_ "k8s.io/kubernetes/cmd/kube-apiserver"
	_ "k8s.io/kubernetes/cmd/kube-controller-manager"
	_ "k8s.io/kubernetes/cmd/kube-proxy"
	_ "k8s.io/kubernetes/cmd/kube-scheduler"
	_ "k8s.io/kubernetes/cmd/kubelet"
)
