def fizzbuzz(n: int) -> list:
    """Return the list of strings for 1..n: "Fizz" for multiples of 3, "Buzz" for
    multiples of 5, "FizzBuzz" for multiples of both, else the number as a string."""
