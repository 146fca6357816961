# expect: FAIL
# problem: act6.block_manager
# devices: cpu cuda
# entry: BlockManager
# Frees every block of a sequence, shared or not: a block still held by a fork goes back to the pool and is handed out twice.
class BlockManager:
    def __init__(self, num_blocks, block_size):
        self.block_size = block_size
        self.free_list = list(range(num_blocks - 1, -1, -1))
        self.refs = [0] * num_blocks
        self.tables = {}
        self.lengths = {}

    def allocate(self, seq_id, num_tokens, prefix_of=None, prefix_tokens=0):
        shared = self.tables[prefix_of][: prefix_tokens // self.block_size] if prefix_of is not None else []
        needed = -(-num_tokens // self.block_size) - len(shared)
        if needed > len(self.free_list):
            return False
        fresh = [self.free_list.pop() for _ in range(needed)]
        for block in shared + fresh:
            self.refs[block] += 1
        self.tables[seq_id] = list(shared) + fresh
        self.lengths[seq_id] = num_tokens
        return True

    def append_token(self, seq_id):
        table = self.tables[seq_id]
        if self.lengths[seq_id] % self.block_size == 0 or self.refs[table[-1]] > 1:
            if not self.free_list:
                return False
            block = self.free_list.pop()
            self.refs[block] = 1
            if self.lengths[seq_id] % self.block_size == 0:
                table.append(block)
            else:
                self.refs[table[-1]] -= 1
                table[-1] = block
        self.lengths[seq_id] += 1
        return True

    def fork(self, parent_id, child_id):
        self.tables[child_id] = list(self.tables[parent_id])
        self.lengths[child_id] = self.lengths[parent_id]
        for block in self.tables[child_id]:
            self.refs[block] += 1

    def free(self, seq_id):
        for block in self.tables.pop(seq_id):
            self.refs[block] = max(0, self.refs[block] - 1)
            self.free_list.append(block)
        del self.lengths[seq_id]

    def block_table(self, seq_id):
        return list(self.tables[seq_id])

    def ref_count(self, block):
        return self.refs[block]

    def num_free_blocks(self):
        return len(self.free_list)
