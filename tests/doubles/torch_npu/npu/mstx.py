CALLS = []


class mstx:
    _next_id = 0

    @staticmethod
    def mark(message: str, stream=None, domain: str = 'default'):
        CALLS.append(("mark", message, domain))

    @staticmethod
    def range_start(message: str, stream=None, domain: str = 'default') -> int:
        mstx._next_id += 1
        CALLS.append(("range_start", message, domain, mstx._next_id))
        return mstx._next_id

    @staticmethod
    def range_end(range_id: int, domain: str = 'default'):
        CALLS.append(("range_end", range_id, domain))
