from geometry import area

WIDTH, HEIGHT = 3, 4


def main():
    print(f"area: {area(WIDTH, HEIGHT)}")


if __name__ == "__main__":
    main()
