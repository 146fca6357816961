"""Act 6, exact answer: KV slots wasted by static reservation and by paging."""
