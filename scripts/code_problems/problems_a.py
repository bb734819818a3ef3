# Authoring source for bundled problems (levels 1-2). Expected values are computed by running the reference.
P = []
def fn(name, level, statement, signature, ref, public, hidden):
    P.append(dict(name=name, level=level, form="function", statement=statement, signature=signature,
                  reference=ref, public=public, hidden=hidden))
def io(name, level, statement, ref, public, hidden):
    P.append(dict(name=name, level=level, form="stdio", statement=statement, reference=ref,
                  public=public, hidden=hidden))

# ---------------- level 1: basics
io("fizzbuzz", 1,
"Read an integer n (1 <= n <= 1000) from standard input. Print the numbers from 1 to n, one per line, "
"but print Fizz instead of multiples of 3, Buzz instead of multiples of 5, and FizzBuzz instead of "
"multiples of both.",
"""n = int(input())
for i in range(1, n + 1):
    if i % 15 == 0:
        print("FizzBuzz")
    elif i % 3 == 0:
        print("Fizz")
    elif i % 5 == 0:
        print("Buzz")
    else:
        print(i)
""", ["1\n", "5\n", "15\n"], ["3\n", "10\n", "16\n", "30\n", "100\n"])

fn("digit_sum", 1,
"Write digit_sum(n: int) -> int returning the sum of the decimal digits of n. For a negative n, ignore the sign.",
"digit_sum(n: int) -> int",
"""def digit_sum(n):
    return sum(int(c) for c in str(abs(n)))
""", [(123,), (0,), (9,)], [(-45,), (1000000,), (987654321,), (10**30 - 1,), (-7,)])

fn("is_leap_year", 1,
"Write is_leap_year(year: int) -> bool. A year is a leap year if it is divisible by 4, except years "
"divisible by 100, which are leap years only when also divisible by 400.",
"is_leap_year(year: int) -> bool",
"""def is_leap_year(year):
    return year % 4 == 0 and (year % 100 != 0 or year % 400 == 0)
""", [(2024,), (2023,), (2000,)], [(1900,), (2100,), (2400,), (1,), (4,), (1996,)])

fn("max_of_three", 1,
"Write max_of_three(a: int, b: int, c: int) -> int returning the largest of the three, without using max().",
"max_of_three(a: int, b: int, c: int) -> int",
"""def max_of_three(a, b, c):
    best = a
    if b > best:
        best = b
    if c > best:
        best = c
    return best
""", [(1, 2, 3), (3, 2, 1), (5, 5, 5)], [(-1, -2, -3), (0, 10, 5), (7, 7, 2), (-100, 100, 0), (2, 3, 3)])

fn("count_vowels", 1,
"Write count_vowels(text: str) -> int counting the vowels a, e, i, o, u in text, in upper or lower case.",
"count_vowels(text: str) -> int",
"""def count_vowels(text):
    return sum(1 for c in text.lower() if c in "aeiou")
""", [("hello",), ("",), ("AEIOU",)], [("rhythm",), ("Programming Puzzles",), ("xyz AEI oo",), ("a" * 50,), ("Queueing",)])

io("sum_to_n", 1,
"Read an integer n (0 <= n <= 10**9) and print the sum 1 + 2 + ... + n.",
"""n = int(input())
print(n * (n + 1) // 2)
""", ["3\n", "0\n", "10\n"], ["1\n", "100\n", "999\n", "1000000000\n", "12345\n"])

io("even_or_odd", 1,
"The first line holds an integer t. Each of the next t lines holds one integer. For each, print EVEN or ODD.",
"""import sys
data = sys.stdin.read().split()
t = int(data[0])
for token in data[1:1 + t]:
    print("EVEN" if int(token) % 2 == 0 else "ODD")
""", ["1\n4\n", "2\n3\n-2\n", "3\n0\n1\n2\n"],
 ["1\n-7\n", "4\n10\n11\n12\n13\n", "2\n1000000000000\n999999999999\n", "1\n0\n", "5\n5\n5\n5\n5\n6\n"])

fn("reverse_number", 1,
"Write reverse_number(n: int) -> int that reverses the decimal digits of n, keeping its sign. "
"Leading zeros of the result disappear: reverse_number(120) == 21.",
"reverse_number(n: int) -> int",
"""def reverse_number(n):
    sign = -1 if n < 0 else 1
    return sign * int(str(abs(n))[::-1])
""", [(123,), (-45,), (120,)], [(0,), (7,), (-1000,), (1234567890,), (11,)])

fn("triangle_kind", 1,
"Write triangle_kind(a: int, b: int, c: int) -> str for side lengths a, b, c. Return 'invalid' if they "
"cannot form a triangle with positive area, else 'equilateral', 'isosceles' or 'scalene'.",
"triangle_kind(a: int, b: int, c: int) -> str",
"""def triangle_kind(a, b, c):
    x, y, z = sorted((a, b, c))
    if x <= 0 or x + y <= z:
        return "invalid"
    if x == z:
        return "equilateral"
    if x == y or y == z:
        return "isosceles"
    return "scalene"
""", [(3, 3, 3), (3, 4, 5), (1, 2, 3)], [(2, 2, 3), (0, 1, 1), (5, 3, 5), (10, 1, 1), (7, 8, 9), (-1, 2, 2)])

fn("clamp_list", 1,
"Write clamp_list(values: list[int], low: int, high: int) -> list[int] returning a new list where each value "
"below low becomes low and each value above high becomes high.",
"clamp_list(values: list[int], low: int, high: int) -> list[int]",
"""def clamp_list(values, low, high):
    return [min(max(v, low), high) for v in values]
""", [([1, 5, 10], 2, 8), ([], 0, 1), ([3], 3, 3)], [([-5, 0, 5], 0, 0), ([1, 2, 3], 10, 20), ([100, -100], -1, 1), ([4, 4, 4], 1, 9), ([7, 2, 9, 1], 2, 7)])

fn("seconds_to_clock", 1,
"Write seconds_to_clock(seconds: int) -> str formatting a number of seconds (0 <= seconds < 360000) as "
"'HH:MM:SS' with two digits per field.",
"seconds_to_clock(seconds: int) -> str",
"""def seconds_to_clock(seconds):
    h, rest = divmod(seconds, 3600)
    m, s = divmod(rest, 60)
    return f"{h:02d}:{m:02d}:{s:02d}"
""", [(0,), (61,), (3600,)], [(59,), (3599,), (86399,), (359999,), (45296,)])

# ---------------- level 2: strings and lists
fn("is_palindrome", 2,
"Write is_palindrome(text: str) -> bool. Ignore case and every character that is not a letter or digit.",
"is_palindrome(text: str) -> bool",
"""def is_palindrome(text):
    kept = [c.lower() for c in text if c.isalnum()]
    return kept == kept[::-1]
""", [("Racecar",), ("hello",), ("",)], [("A man, a plan, a canal: Panama",), ("No 'x' in Nixon",), ("ab",), ("12321",), ("1231",)])

io("word_frequency", 2,
"Read text from standard input until end of file. Words are maximal runs of letters a-z (case-insensitive; "
"compare in lower case). Print each distinct word and its count as 'word count', one per line, most frequent "
"first, ties broken alphabetically.",
"""import re, sys
from collections import Counter
counts = Counter(re.findall(r"[a-z]+", sys.stdin.read().lower()))
for word, count in sorted(counts.items(), key=lambda item: (-item[1], item[0])):
    print(word, count)
""", ["the cat and the hat\n", "a A a\n", "Hello, world!\n"],
 ["one two three two three three\n", "x\ny\nx y\n", "It's a dog's life.\n", "B b a A c\n", "zeta alpha zeta alpha beta\n"])

fn("run_length_encode", 2,
"Write run_length_encode(text: str) -> list[tuple[str, int]] returning runs of equal characters as "
"(character, length) tuples, in order.",
"run_length_encode(text: str) -> list[tuple[str, int]]",
"""def run_length_encode(text):
    runs = []
    for c in text:
        if runs and runs[-1][0] == c:
            runs[-1] = (c, runs[-1][1] + 1)
        else:
            runs.append((c, 1))
    return runs
""", [("aaabcc",), ("",), ("x",)], [("abc",), ("zzzzzz",), ("aabbaa",), ("  !!",), ("abbcccdddd",)])

fn("second_largest", 2,
"Write second_largest(values: list[int]) -> int | None returning the second largest distinct value, or None "
"when there are fewer than two distinct values.",
"second_largest(values: list[int]) -> int | None",
"""def second_largest(values):
    distinct = sorted(set(values))
    return distinct[-2] if len(distinct) >= 2 else None
""", [([1, 2, 3],), ([5, 5],), ([],)], [([3, 1, 3, 2],), ([-1, -5, -3],), ([7],), ([10, 10, 9, 9],), ([0, 100, 50, 100],)])

fn("rotate_right", 2,
"Write rotate_right(values: list[int], k: int) -> list[int] returning the list rotated right by k places "
"(k >= 0, possibly larger than the length).",
"rotate_right(values: list[int], k: int) -> list[int]",
"""def rotate_right(values, k):
    if not values:
        return []
    k %= len(values)
    return values[-k:] + values[:-k] if k else list(values)
""", [([1, 2, 3, 4], 1), ([1, 2, 3], 0), ([], 5)], [([1, 2, 3], 3), ([1, 2, 3], 4), ([9], 100), ([1, 2, 3, 4, 5], 2), ([5, 6], 7)])

fn("are_anagrams", 2,
"Write are_anagrams(a: str, b: str) -> bool: True when the two strings use the same letters the same number "
"of times, ignoring case and spaces.",
"are_anagrams(a: str, b: str) -> bool",
"""def are_anagrams(a, b):
    clean = lambda s: sorted(s.replace(" ", "").lower())
    return clean(a) == clean(b)
""", [("listen", "silent"), ("abc", "abd"), ("", "")], [("Dormitory", "dirty room"), ("aab", "abb"), ("a", "A"), ("abc", "abcd"), ("The eyes", "They see")])

fn("unique_in_order", 2,
"Write unique_in_order(values: list) -> list returning the values with duplicates removed, keeping the first "
"occurrence of each and the original order.",
"unique_in_order(values: list) -> list",
"""def unique_in_order(values):
    seen = set()
    out = []
    for v in values:
        if v not in seen:
            seen.add(v)
            out.append(v)
    return out
""", [([1, 2, 1, 3],), ([],), (["a", "a"],)], [([3, 3, 3],), ([1, "1", 1, "1"],), ([5, 4, 3, 4, 5],), (["x", "y", "z"],), ([0, -0, 1, 0],)])

fn("letter_histogram", 2,
"Write letter_histogram(text: str) -> dict[str, int] mapping each lowercase letter that occurs in text "
"(after lowering it) to its count. Other characters are ignored.",
"letter_histogram(text: str) -> dict[str, int]",
"""def letter_histogram(text):
    counts = {}
    for c in text.lower():
        if "a" <= c <= "z":
            counts[c] = counts.get(c, 0) + 1
    return counts
""", [("aab",), ("",), ("Hi!",)], [("Mississippi",), ("123",), ("AaBbCc",), ("zzz yyy",), ("The Quick Brown Fox",)])

fn("caesar_shift", 2,
"Write caesar_shift(text: str, shift: int) -> str shifting each letter by shift places in the alphabet "
"(wrapping around, keeping case); other characters stay as they are. shift may be negative or large.",
"caesar_shift(text: str, shift: int) -> str",
"""def caesar_shift(text, shift):
    out = []
    for c in text:
        if c.islower() and c.isascii():
            out.append(chr((ord(c) - 97 + shift) % 26 + 97))
        elif c.isupper() and c.isascii():
            out.append(chr((ord(c) - 65 + shift) % 26 + 65))
        else:
            out.append(c)
    return "".join(out)
""", [("abc", 1), ("xyz", 3), ("Hello, World!", 13)], [("abc", -1), ("Zebra", 26), ("Zebra", 52 + 1), ("", 5), ("Python 3.11", -29)])

io("title_case", 2,
"Read lines until end of file. For each line, print it with the first letter of every space-separated word "
"in upper case and the rest of the word in lower case. Keep the spaces as they are.",
"""import sys
for line in sys.stdin.read().split("\\n"):
    if line == "":
        continue
    print(" ".join(w[:1].upper() + w[1:].lower() for w in line.split(" ")))
""", ["hello world\n", "PYTHON\n", "a b c\n"], ["the QUICK brown fox\n", "one\ntwo three\n", "x  y\n", "mIxEd CaSe\n", "9lives cat\n"])

fn("transpose", 2,
"Write transpose(matrix: list[list[int]]) -> list[list[int]] returning the transpose of a rectangular matrix. "
"The transpose of [] is [].",
"transpose(matrix: list[list[int]]) -> list[list[int]]",
"""def transpose(matrix):
    if not matrix:
        return []
    return [[row[j] for row in matrix] for j in range(len(matrix[0]))]
""", [([[1, 2], [3, 4]],), ([],), ([[1, 2, 3]],)], [([[1], [2], [3]],), ([[1, 2, 3], [4, 5, 6]],), ([[7]],), ([[0, 0], [0, 1], [1, 1]],), ([[1, 2], [3, 4], [5, 6], [7, 8]],)])

fn("merge_sorted", 2,
"Write merge_sorted(a: list[int], b: list[int]) -> list[int] merging two ascending lists into one ascending "
"list, without calling sort or sorted.",
"merge_sorted(a: list[int], b: list[int]) -> list[int]",
"""def merge_sorted(a, b):
    i = j = 0
    out = []
    while i < len(a) and j < len(b):
        if a[i] <= b[j]:
            out.append(a[i]); i += 1
        else:
            out.append(b[j]); j += 1
    return out + a[i:] + b[j:]
""", [([1, 3], [2, 4]), ([], [1]), ([], [])], [([1, 1, 1], [1]), ([-5, 0, 5], [-10, 10]), ([1, 2, 3], []), ([2], [1, 3, 5, 7]), ([0, 2, 4, 6], [1, 3, 5, 7])])
