# expect: FAIL
# problem: act6.scheduler
# devices: cpu cuda
# entry: Scheduler
# Admits every waiting request up to max_batch without counting blocks: the KV cache overflows at the first step.
import importlib.util

import subprocess

import sys

import autograder

from collections import deque

class Scheduler:
    """Continuous batching over a paged KV cache of kv_blocks blocks of block_size tokens, at most
    max_batch requests decoding at once."""

    def __init__(self, kv_blocks: int, block_size: int, max_batch: int):
        ### BEGIN SOLUTION
        self.kv_blocks, self.block_size, self.max_batch = kv_blocks, block_size, max_batch
        self.waiting = deque()
        self.running = []
        self.tokens = {}
        self.max_new = {}
        ### END SOLUTION

    def add_request(self, request_id: int, prompt_len: int, max_new_tokens: int) -> None:
        ### BEGIN SOLUTION
        self.tokens[request_id] = prompt_len
        self.max_new[request_id] = max_new_tokens
        self.waiting.append(request_id)
        ### END SOLUTION

    def step(self, finished: list) -> dict:
        ### BEGIN SOLUTION
        self.running = [r for r in self.running if r not in set(finished)]

        def blocks_after_step(r):
            # Its cache after this step holds its prompt, its tokens so far and this step's token.
            return -(-(self.tokens[r] + 1) // self.block_size)

        held = sum(blocks_after_step(r) for r in self.running)
        preempt = []
        # Out of blocks: the latest admitted request gives its cache back and waits at the front.
        while held > self.kv_blocks and self.running:
            victim = self.running.pop()
            held -= blocks_after_step(victim)
            preempt.append(victim)
            self.waiting.appendleft(victim)
        # Admit in arrival order while the next request's blocks fit: a request only needs the blocks
        # it fills now, not its longest possible length.
        while self.waiting and len(self.running) < self.max_batch:  # the blocks a request will need are not counted
            r = self.waiting.popleft()
            held += blocks_after_step(r)
            self.running.append(r)
        for r in self.running:
            self.tokens[r] += 1
        return {"run": list(self.running), "preempt": preempt}

finished, generated, lengths = [], {0: 0, 1: 0, 2: 0}, {0: 3, 1: 2, 2: 4}
