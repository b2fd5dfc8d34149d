# Hidden check: run in the task's workspace; exit 0 means solved.
import os, sys
sys.path.insert(0, os.getcwd())
from solution import is_palindrome
assert is_palindrome("A man, a plan, a canal: Panama")
assert is_palindrome("")
assert not is_palindrome("hello")
assert is_palindrome("No 'x' in Nixon")
