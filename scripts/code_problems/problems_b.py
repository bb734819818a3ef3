from problems_a import P, fn, io  # noqa: F401  (build.py reads P from here: both files append to it)

# ---------------- level 3: classic algorithms
fn("binary_search", 3,
"Write binary_search(values: list[int], target: int) -> int returning the index of target in the ascending "
"list values (all distinct), or -1 if it is absent. Aim for O(log n).",
"binary_search(values: list[int], target: int) -> int",
"""def binary_search(values, target):
    lo, hi = 0, len(values) - 1
    while lo <= hi:
        mid = (lo + hi) // 2
        if values[mid] == target:
            return mid
        if values[mid] < target:
            lo = mid + 1
        else:
            hi = mid - 1
    return -1
""", [([1, 3, 5, 7], 5), ([1, 3, 5, 7], 4), ([], 1)], [([2], 2), ([2], 3), (list(range(0, 1000, 3)), 999), (list(range(0, 1000, 3)), 0), ([-9, -4, 0, 8, 20], 20)])

fn("gcd_lcm", 3,
"Write gcd_lcm(a: int, b: int) -> tuple[int, int] returning (greatest common divisor, least common multiple) "
"of two positive integers, without importing math.",
"gcd_lcm(a: int, b: int) -> tuple[int, int]",
"""def gcd_lcm(a, b):
    x, y = a, b
    while y:
        x, y = y, x % y
    return (x, a // x * b)
""", [(4, 6), (7, 13), (10, 10)], [(1, 1), (12, 18), (100, 75), (2**40, 6**10), (17, 289)])

fn("primes_up_to", 3,
"Write primes_up_to(n: int) -> list[int] returning all primes <= n in ascending order (n may be up to 200000).",
"primes_up_to(n: int) -> list[int]",
"""def primes_up_to(n):
    if n < 2:
        return []
    sieve = bytearray([1]) * (n + 1)
    sieve[0] = sieve[1] = 0
    for i in range(2, int(n ** 0.5) + 1):
        if sieve[i]:
            sieve[i * i::i] = bytearray(len(range(i * i, n + 1, i)))
    return [i for i in range(n + 1) if sieve[i]]
""", [(10,), (1,), (2,)], [(0,), (30,), (97,), (100,), (50000,)])

fn("balanced_brackets", 3,
"Write balanced_brackets(text: str) -> bool: True when every (, [ and { in text is closed by the matching "
"bracket in the right order. Other characters are ignored.",
"balanced_brackets(text: str) -> bool",
"""def balanced_brackets(text):
    pairs = {")": "(", "]": "[", "}": "{"}
    stack = []
    for c in text:
        if c in "([{":
            stack.append(c)
        elif c in pairs:
            if not stack or stack.pop() != pairs[c]:
                return False
    return not stack
""", [("([]{})",), ("(]",), ("",)], [("((",), ("a(b[c]d)e",), ("}{",), ("{[()()]}",), ("([)]",), ("(((())))" * 100,)])

fn("two_sum", 3,
"Write two_sum(values: list[int], target: int) -> tuple[int, int] | None returning indices (i, j) with i < j "
"and values[i] + values[j] == target, choosing the pair with the smallest j, then the smallest i; None if "
"there is no such pair.",
"two_sum(values: list[int], target: int) -> tuple[int, int] | None",
"""def two_sum(values, target):
    first_index = {}
    for j, v in enumerate(values):
        if target - v in first_index:
            return (first_index[target - v], j)
        first_index.setdefault(v, j)
    return None
""", [([2, 7, 11, 15], 9), ([1, 2], 5), ([3, 3], 6)], [([], 0), ([1, 5, 1, 5], 6), ([0, -1, 2, -3, 1], -2), ([4, 4, 4], 8), (list(range(1000)), 1997)])

fn("fibonacci_mod", 3,
"Write fibonacci_mod(n: int, m: int) -> int returning F(n) mod m where F(0) = 0, F(1) = 1. n can be as large "
"as 10**18, so a linear loop is too slow.",
"fibonacci_mod(n: int, m: int) -> int",
"""def fibonacci_mod(n, m):
    def pair(k):
        if k == 0:
            return (0, 1)
        a, b = pair(k // 2)
        c = a * ((2 * b - a) % m) % m
        d = (a * a + b * b) % m
        return (d, (c + d) % m) if k % 2 else (c, d)
    return pair(n)[0] % m
""", [(10, 1000), (1, 7), (0, 5)], [(2, 2), (50, 1000000007), (10**18, 1000000007), (123456789, 1), (1000, 97)])

io("max_subarray", 3,
"The first line holds n (1 <= n <= 200000), the second n integers. Print the largest sum of a non-empty "
"contiguous subarray.",
"""import sys
data = sys.stdin.read().split()
n = int(data[0])
best = current = int(data[1])
for token in data[2:1 + n]:
    x = int(token)
    current = max(x, current + x)
    best = max(best, current)
print(best)
""", ["5\n1 -2 3 4 -1\n", "1\n-5\n", "3\n2 2 2\n"],
 ["4\n-1 -2 -3 -4\n", "6\n-2 1 -3 4 -1 2\n", "8\n5 -9 6 -2 3 -10 7 1\n", "2\n0 0\n",
  "50000\n" + " ".join(str((i * 7919) % 201 - 100) for i in range(50000)) + "\n"])

fn("longest_common_prefix", 3,
"Write longest_common_prefix(words: list[str]) -> str returning the longest string that starts every word "
"('' for an empty list).",
"longest_common_prefix(words: list[str]) -> str",
"""def longest_common_prefix(words):
    if not words:
        return ""
    prefix = words[0]
    for w in words[1:]:
        while not w.startswith(prefix):
            prefix = prefix[:-1]
    return prefix
""", [(["flower", "flow", "flight"],), ([],), (["same", "same"],)], [(["a"],), (["dog", "racecar"],), (["", "abc"],), (["interview", "internet", "interval"],), (["abc", "abcd", "ab"],)])

fn("roman_to_int", 3,
"Write roman_to_int(numeral: str) -> int converting a valid Roman numeral (I, V, X, L, C, D, M with "
"subtractive pairs such as IV and CM) between 1 and 3999 to an integer.",
"roman_to_int(numeral: str) -> int",
"""def roman_to_int(numeral):
    values = {"I": 1, "V": 5, "X": 10, "L": 50, "C": 100, "D": 500, "M": 1000}
    total = 0
    for i, c in enumerate(numeral):
        v = values[c]
        if i + 1 < len(numeral) and values[numeral[i + 1]] > v:
            total -= v
        else:
            total += v
    return total
""", [("III",), ("IV",), ("MCMXCIV",)], [("I",), ("LVIII",), ("MMMCMXCIX",), ("XLII",), ("CDXLIV",)])

io("grid_shortest_path", 3,
"The first line holds R and C (1 <= R, C <= 200). The next R lines hold the grid: '.' free, '#' wall, 'S' "
"start, 'E' end (exactly one each). Moving up, down, left or right costs 1. Print the fewest moves from S to "
"E, or -1 if E cannot be reached.",
"""import sys
from collections import deque
lines = sys.stdin.read().split("\\n")
r, c = map(int, lines[0].split())
grid = [lines[1 + i][:c] for i in range(r)]
for i in range(r):
    for j in range(c):
        if grid[i][j] == "S":
            start = (i, j)
dist = {start: 0}
queue = deque([start])
answer = -1
while queue:
    i, j = queue.popleft()
    if grid[i][j] == "E":
        answer = dist[(i, j)]
        break
    for di, dj in ((1, 0), (-1, 0), (0, 1), (0, -1)):
        ni, nj = i + di, j + dj
        if 0 <= ni < r and 0 <= nj < c and grid[ni][nj] != "#" and (ni, nj) not in dist:
            dist[(ni, nj)] = dist[(i, j)] + 1
            queue.append((ni, nj))
print(answer)
""", ["1 2\nSE\n", "3 3\nS.#\n.#.\n..E\n", "1 3\nS#E\n"],
 ["2 2\nS#\n#E\n", "3 4\nS...\n###.\nE...\n", "1 1\nS\n".replace("S\n", "S\n") if False else "2 1\nS\nE\n",
  "5 5\nS....\n####.\n.....\n.####\n....E\n",
  "200 200\n" + "S" + "." * 199 + "\n" + "\n".join("." * 200 for _ in range(198)) + "\n" + "." * 199 + "E\n"])

fn("matrix_spiral", 3,
"Write matrix_spiral(matrix: list[list[int]]) -> list[int] returning the elements of a rectangular matrix "
"in clockwise spiral order starting at the top-left corner.",
"matrix_spiral(matrix: list[list[int]]) -> list[int]",
"""def matrix_spiral(matrix):
    out = []
    rows = [list(r) for r in matrix]
    while rows:
        out.extend(rows.pop(0))
        rows = [list(r) for r in zip(*rows)][::-1]
    return out
""", [([[1, 2], [3, 4]],), ([[1, 2, 3]],), ([],)], [([[1], [2], [3]],), ([[1, 2, 3], [4, 5, 6], [7, 8, 9]],), ([[1, 2, 3, 4], [5, 6, 7, 8], [9, 10, 11, 12]],), ([[5]],), ([[1, 2], [3, 4], [5, 6]],)])

# ---------------- level 4: harder algorithms
fn("longest_increasing_subsequence", 4,
"Write longest_increasing_subsequence(values: list[int]) -> int returning the length of the longest strictly "
"increasing subsequence. values may hold 100000 items, so aim for O(n log n).",
"longest_increasing_subsequence(values: list[int]) -> int",
"""from bisect import bisect_left
def longest_increasing_subsequence(values):
    tails = []
    for v in values:
        k = bisect_left(tails, v)
        if k == len(tails):
            tails.append(v)
        else:
            tails[k] = v
    return len(tails)
""", [([10, 9, 2, 5, 3, 7, 101, 18],), ([],), ([5, 5, 5],)], [([1, 2, 3, 4],), ([4, 3, 2, 1],), ([0, 8, 4, 12, 2, 10, 6, 14, 1, 9],), ([3, 1, 2, 1, 8, 5, 6],), ([(i * 7919) % 100003 for i in range(20000)],)])

fn("edit_distance", 4,
"Write edit_distance(a: str, b: str) -> int returning the Levenshtein distance: the fewest single-character "
"insertions, deletions and substitutions turning a into b (lengths up to 1000).",
"edit_distance(a: str, b: str) -> int",
"""def edit_distance(a, b):
    previous = list(range(len(b) + 1))
    for i, ca in enumerate(a, 1):
        current = [i]
        for j, cb in enumerate(b, 1):
            current.append(min(previous[j] + 1, current[j - 1] + 1, previous[j - 1] + (ca != cb)))
        previous = current
    return previous[-1]
""", [("kitten", "sitting"), ("", "abc"), ("same", "same")], [("abc", ""), ("flaw", "lawn"), ("intention", "execution"), ("a" * 300, "b" * 300), ("abcdef" * 50, "azced" * 60)])

fn("coin_change", 4,
"Write coin_change(coins: list[int], amount: int) -> int returning the fewest coins (unlimited supply of each "
"positive denomination) summing exactly to amount, or -1 if impossible. amount <= 10000.",
"coin_change(coins: list[int], amount: int) -> int",
"""def coin_change(coins, amount):
    INF = amount + 1
    best = [0] + [INF] * amount
    for total in range(1, amount + 1):
        for c in coins:
            if c <= total and best[total - c] + 1 < best[total]:
                best[total] = best[total - c] + 1
    return best[amount] if best[amount] <= amount else -1
""", [([1, 2, 5], 11), ([2], 3), ([1], 0)], [([3, 7], 5), ([1, 3, 4], 6), ([186, 419, 83, 408], 6249), ([7], 10000 - 10000 % 7), ([2, 5, 10, 1], 27)])

io("knapsack", 4,
"The first line holds n and W (1 <= n <= 100, 1 <= W <= 10000). Each of the next n lines holds the weight "
"and value of an item. Print the largest total value of items whose total weight is at most W (each item "
"used at most once).",
"""import sys
data = list(map(int, sys.stdin.read().split()))
n, capacity = data[0], data[1]
best = [0] * (capacity + 1)
for k in range(n):
    w, v = data[2 + 2 * k], data[3 + 2 * k]
    for cap in range(capacity, w - 1, -1):
        if best[cap - w] + v > best[cap]:
            best[cap] = best[cap - w] + v
print(best[capacity])
""", ["3 50\n10 60\n20 100\n30 120\n", "1 5\n10 100\n", "2 10\n5 10\n5 20\n"],
 ["4 7\n1 1\n3 4\n4 5\n5 7\n", "1 1\n1 9\n", "3 6\n2 3\n2 3\n2 3\n", "5 0\n1 1\n1 1\n1 1\n1 1\n1 1\n".replace("5 0", "5 1"),
  "100 10000\n" + "".join(f"{(i * 37) % 500 + 1} {(i * 91) % 1000 + 1}\n" for i in range(100))])

io("dijkstra", 4,
"The first line holds n and m (2 <= n <= 10000, m <= 50000): nodes 1..n and m undirected edges. Each of the "
"next m lines holds u, v, w (1 <= w <= 1000). Print the length of the shortest path from node 1 to node n, "
"or -1 if there is none.",
"""import heapq, sys
data = list(map(int, sys.stdin.read().split()))
n, m = data[0], data[1]
graph = [[] for _ in range(n + 1)]
for k in range(m):
    u, v, w = data[2 + 3 * k: 5 + 3 * k]
    graph[u].append((v, w))
    graph[v].append((u, w))
dist = [None] * (n + 1)
heap = [(0, 1)]
while heap:
    d, u = heapq.heappop(heap)
    if dist[u] is not None:
        continue
    dist[u] = d
    for v, w in graph[u]:
        if dist[v] is None:
            heapq.heappush(heap, (d + w, v))
print(dist[n] if dist[n] is not None else -1)
""", ["3 3\n1 2 1\n2 3 1\n1 3 5\n", "2 0\n", "2 1\n1 2 7\n"],
 ["4 4\n1 2 5\n2 4 5\n1 3 1\n3 4 20\n", "3 1\n1 2 4\n", "5 6\n1 2 2\n1 3 9\n2 3 3\n3 4 1\n4 5 1\n2 5 10\n",
  "4 3\n1 1 3\n2 3 4\n3 4 1\n",
  "3000 5998\n" + "".join(f"{i} {i + 1} {(i * 13) % 1000 + 1}\n" for i in range(1, 3000))
  + "".join(f"{i} {min(3000, i + 50)} {(i * 7) % 1000 + 1}\n" for i in range(1, 3000))])

fn("count_islands", 4,
"Write count_islands(grid: list[str]) -> int where each string is a row of '1' (land) and '0' (water). "
"Return the number of islands: groups of land cells joined up, down, left or right. Grids are up to "
"300 x 300, so avoid deep recursion.",
"count_islands(grid: list[str]) -> int",
"""def count_islands(grid):
    rows, cols = len(grid), len(grid[0]) if grid else 0
    seen = [[False] * cols for _ in range(rows)]
    count = 0
    for i in range(rows):
        for j in range(cols):
            if grid[i][j] == "1" and not seen[i][j]:
                count += 1
                stack = [(i, j)]
                seen[i][j] = True
                while stack:
                    a, b = stack.pop()
                    for na, nb in ((a + 1, b), (a - 1, b), (a, b + 1), (a, b - 1)):
                        if 0 <= na < rows and 0 <= nb < cols and grid[na][nb] == "1" and not seen[na][nb]:
                            seen[na][nb] = True
                            stack.append((na, nb))
    return count
""", [(["110", "010", "001"],), ([],), (["000"],)], [(["1"],), (["101", "010", "101"],), (["11111", "10001", "10101", "10001", "11111"],), (["1" * 120] * 120,), (["10" * 60, "01" * 60] * 60,)])

fn("longest_palindromic_substring", 4,
"Write longest_palindromic_substring(text: str) -> str returning the longest substring that reads the same "
"backwards; if several have that length, the one that starts first. len(text) <= 2000.",
"longest_palindromic_substring(text: str) -> str",
"""def longest_palindromic_substring(text):
    best = text[:1]
    for center in range(2 * len(text) - 1):
        lo, hi = center // 2, center // 2 + center % 2
        while lo >= 0 and hi < len(text) and text[lo] == text[hi]:
            lo -= 1
            hi += 1
        if hi - lo - 1 > len(best):
            best = text[lo + 1:hi]
    return best
""", [("babad",), ("cbbd",), ("",)], [("a",), ("abacdfgdcaba",), ("forgeeksskeegfor",), ("abcde",), ("xy" * 500 + "z" + "yx" * 500,)])

fn("merge_intervals", 4,
"Write merge_intervals(intervals: list[tuple[int, int]]) -> list[tuple[int, int]] merging overlapping or "
"touching closed intervals (start <= end) and returning them sorted by start.",
"merge_intervals(intervals: list[tuple[int, int]]) -> list[tuple[int, int]]",
"""def merge_intervals(intervals):
    merged = []
    for start, end in sorted(intervals):
        if merged and start <= merged[-1][1]:
            merged[-1] = (merged[-1][0], max(merged[-1][1], end))
        else:
            merged.append((start, end))
    return merged
""", [([(1, 3), (2, 6), (8, 10)],), ([],), ([(1, 4), (4, 5)],)], [([(5, 6), (1, 2)],), ([(1, 10), (2, 3), (4, 5)],), ([(0, 0), (0, 0)],), ([(-5, -1), (-2, 3), (10, 12), (3, 9)],), ([(i, i + 1) for i in range(0, 100, 3)],)])

io("count_inversions", 4,
"The first line holds n (1 <= n <= 200000), the second n integers. Print the number of pairs i < j with "
"a[i] > a[j]. An O(n^2) solution is too slow.",
"""import sys
def sort_count(a):
    if len(a) <= 1:
        return a, 0
    mid = len(a) // 2
    left, x = sort_count(a[:mid])
    right, y = sort_count(a[mid:])
    merged, count, i, j = [], x + y, 0, 0
    while i < len(left) and j < len(right):
        if left[i] <= right[j]:
            merged.append(left[i]); i += 1
        else:
            merged.append(right[j]); j += 1
            count += len(left) - i
    merged += left[i:] + right[j:]
    return merged, count
data = sys.stdin.read().split()
n = int(data[0])
print(sort_count([int(t) for t in data[1:1 + n]])[1])
""", ["3\n3 1 2\n", "1\n5\n", "4\n1 2 3 4\n"],
 ["4\n4 3 2 1\n", "5\n2 2 2 2 2\n", "6\n1 5 3 5 2 4\n", "2\n-1 -2\n",
  "40000\n" + " ".join(str((i * 7919) % 200003) for i in range(40000)) + "\n"])

fn("n_queens", 4,
"Write n_queens(n: int) -> int returning the number of ways to place n queens on an n x n board so that no "
"two attack each other (1 <= n <= 10).",
"n_queens(n: int) -> int",
"""def n_queens(n):
    def place(row, cols, diag1, diag2):
        if row == n:
            return 1
        total = 0
        for c in range(n):
            if c not in cols and row - c not in diag1 and row + c not in diag2:
                total += place(row + 1, cols | {c}, diag1 | {row - c}, diag2 | {row + c})
        return total
    return place(0, frozenset(), frozenset(), frozenset())
""", [(1,), (4,), (2,)], [(3,), (5,), (6,), (8,), (10,)])

fn("word_ladder_length", 4,
"Write word_ladder_length(begin: str, end: str, words: list[str]) -> int returning the number of words in the "
"shortest sequence from begin to end where each step changes exactly one letter and every word after begin "
"is in words; 0 if there is none.",
"word_ladder_length(begin: str, end: str, words: list[str]) -> int",
"""from collections import deque
def word_ladder_length(begin, end, words):
    allowed = set(words)
    if end not in allowed:
        return 0
    queue = deque([(begin, 1)])
    seen = {begin}
    while queue:
        word, length = queue.popleft()
        if word == end:
            return length
        for i in range(len(word)):
            for ch in "abcdefghijklmnopqrstuvwxyz":
                nxt = word[:i] + ch + word[i + 1:]
                if nxt in allowed and nxt not in seen:
                    seen.add(nxt)
                    queue.append((nxt, length + 1))
    return 0
""", [("hit", "cog", ["hot", "dot", "dog", "lot", "log", "cog"]), ("hit", "cog", ["hot", "dot", "dog", "lot", "log"]), ("a", "c", ["a", "b", "c"])],
 [("same", "same", ["same"]), ("abc", "xyz", ["xbc", "xyc", "xyz"]), ("cold", "warm", ["cord", "card", "ward", "warm", "word", "worm", "wore", "core"]), ("aa", "bb", ["ab", "ba"]), ("aa", "bb", ["cc"])])
