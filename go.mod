module github.com/nemo-gym-go/gym

go 1.26.8
