module polycrate.io/operator/test/dnsclients/externaldns

go 1.26

require sigs.k8s.io/external-dns v0.18.0
