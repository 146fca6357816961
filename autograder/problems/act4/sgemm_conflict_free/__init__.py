"""Act 4, SGEMM step 7: bank-conflict-free shared memory."""
