from mathx import calc

if __name__ == "__main__":
    print(calc([1.25, 2.5, 3.0]))
