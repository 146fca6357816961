"""Act 5, exact answer: Algorithm and bus bandwidth, as nccl-tests reports them."""
