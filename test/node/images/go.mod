module polycrate.io/operator/test/node/images

go 1.26
