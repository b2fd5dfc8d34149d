import unittest

from names import to_camel, to_snake


class ToSnakeTest(unittest.TestCase):
    def test_lower_camel_case(self):
        self.assertEqual(to_snake("userId"), "user_id")
        self.assertEqual(to_snake("maxRetryCount"), "max_retry_count")

    def test_upper_camel_case(self):
        self.assertEqual(to_snake("HelloWorld"), "hello_world")
        self.assertEqual(to_snake("Name"), "name")

    def test_round_trip(self):
        self.assertEqual(to_snake(to_camel("created_at")), "created_at")


class ToCamelTest(unittest.TestCase):
    def test_to_camel(self):
        self.assertEqual(to_camel("user_id"), "userId")
        self.assertEqual(to_camel("name"), "name")


if __name__ == "__main__":
    unittest.main()
