module github.com/neuronfabric/nfabric/validation/akita

go 1.26.0

require (
	github.com/neuronfabric/nfabric v0.0.0
	github.com/sarchlab/akita/v4 v4.9.2
)

require (
	github.com/rs/xid v1.6.0 // indirect
	golang.org/x/sys v0.48.0 // indirect
	gopkg.in/yaml.v3 v3.0.1 // indirect
)

replace github.com/neuronfabric/nfabric => ../..
